//! Starting the engine's threads and pools, with their errors typed.

use crate::error::EngineError;
use std::sync::Arc;
use std::thread::JoinHandle;

/// A rayon pool of `threads` threads named `zkpipe-<name>-<i>`.
pub(crate) fn pool(name: &'static str, threads: usize) -> Result<rayon::ThreadPool, EngineError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("zkpipe-{name}-{i}"))
        .build()
        .map_err(|e| EngineError::Start {
            what: format!("the {name} pool"),
            source: Arc::new(std::io::Error::other(e)),
        })
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

/// Spawns `n` threads named `name-w<i>` running `run` on one shared `stage`.
pub(crate) fn workers<S: Send + Sync + 'static>(
    threads: &mut Vec<JoinHandle<()>>,
    name: &str,
    n: usize,
    stage: &Arc<S>,
    run: fn(&S),
) -> Result<(), EngineError> {
    for i in 0..n {
        let s = Arc::clone(stage);
        threads.push(spawn(format!("{name}-w{i}"), move || run(&s))?);
    }
    Ok(())
}
