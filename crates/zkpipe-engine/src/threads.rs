//! Starting the engine's threads and pools, with their errors typed.

use crate::error::EngineError;
use std::sync::Arc;
use std::thread::JoinHandle;
use zkpipe_core::throttle::Throttle;

/// A rayon pool of `threads` threads named `zkpipe-<name>-<i>`, each running under
/// `throttle`.
pub(crate) fn pool(
    name: &'static str,
    threads: usize,
    throttle: &Arc<Throttle>,
) -> Result<rayon::ThreadPool, EngineError> {
    let t = Arc::clone(throttle);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("zkpipe-{name}-{i}"))
        // The guard of `enter` lives as long as the thread: it is leaked on purpose.
        .start_handler(move |_| std::mem::forget(t.enter()))
        .build()
        .map_err(|e| EngineError::Start {
            what: format!("the {name} pool"),
            source: Arc::new(std::io::Error::other(e)),
        })
}

/// Which rayon pools the stages compute on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PoolMode {
    /// Each stage its own pool, sized by its `threads` knob: a burst in one stage cannot
    /// take every core from another.
    #[default]
    PerStage,
    /// One pool of all cores for every stage (the knobs' `threads` are ignored).
    Shared,
}

impl std::str::FromStr for PoolMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "per-stage" => Ok(Self::PerStage),
            "shared" => Ok(Self::Shared),
            _ => Err(format!("pools {s:?}: expected per-stage or shared")),
        }
    }
}

/// Hands each stage its pool, per [`PoolMode`], every pool's threads under the engine's
/// throttle.
pub(crate) struct StagePools {
    shared: Option<Arc<rayon::ThreadPool>>,
    throttle: Arc<Throttle>,
}

impl StagePools {
    pub fn new(mode: PoolMode, throttle: Arc<Throttle>) -> Result<Self, EngineError> {
        let shared = match mode {
            PoolMode::PerStage => None,
            PoolMode::Shared => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                Some(Arc::new(pool("shared", cores, &throttle)?))
            }
        };
        Ok(Self { shared, throttle })
    }

    /// Stage `name`'s pool: a new one of `threads` threads, or the shared one.
    pub fn get(
        &self,
        name: &'static str,
        threads: usize,
    ) -> Result<Arc<rayon::ThreadPool>, EngineError> {
        match &self.shared {
            Some(p) => Ok(Arc::clone(p)),
            None => Ok(Arc::new(pool(name, threads, &self.throttle)?)),
        }
    }
}

/// A thread named `name` running `f`.
pub(crate) fn spawn(
    name: String,
    f: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>, EngineError> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(f)
        .map_err(|e| EngineError::Start {
            what: name,
            source: Arc::new(e),
        })
}

/// Spawns `n` threads named `name-w<i>` running `run` on one shared `stage`, under
/// `throttle`.
pub(crate) fn workers<S: Send + Sync + 'static>(
    threads: &mut Vec<JoinHandle<()>>,
    name: &str,
    n: usize,
    stage: &Arc<S>,
    run: fn(&S),
    throttle: &Arc<Throttle>,
) -> Result<(), EngineError> {
    for i in 0..n {
        let (s, t) = (Arc::clone(stage), Arc::clone(throttle));
        threads.push(spawn(format!("{name}-w{i}"), move || {
            let _in = t.enter();
            run(&s)
        })?);
    }
    Ok(())
}
