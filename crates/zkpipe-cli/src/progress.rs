//! A progress line on stderr for one-shot work that takes more than a few seconds (a large
//! key's checks, a 2^22 proof on the CPU): a spinner with the current step and the time
//! spent. Only on a terminal, and only once the work has run for [`DELAY`]: pipes, logs and
//! tests never see it, and quick proofs print nothing more than before.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long work runs before its line appears.
pub const DELAY: Duration = Duration::from_secs(2);

/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(120);

/// What the watcher thread reads: the current step, and whether the work is over.
#[derive(Default)]
struct State {
    step: &'static str,
    done: bool,
    shown: bool,
}

/// A progress line for the work in progress; it goes when this is dropped (or
/// [`Progress::finish`]ed), before anything else is printed to stderr.
pub struct Progress {
    shared: Arc<(Mutex<State>, Condvar)>,
    watcher: Mutex<Option<JoinHandle<()>>>,
}

impl Progress {
    /// Watches `what` (e.g. "proving witness.wtns with circuit.zkey") when stderr is a
    /// terminal; otherwise does nothing.
    pub fn start(what: String) -> Self {
        Self::start_if(std::io::stderr().is_terminal(), what, DELAY)
    }

    /// Watches `what` if `enabled`, drawing after `delay`.
    fn start_if(enabled: bool, what: String, delay: Duration) -> Self {
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let watcher = enabled
            .then(|| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name("zkpipe-progress".into())
                    .spawn(move || watch(&shared, &what, delay))
                    .ok()
            })
            .flatten();
        Self {
            shared,
            watcher: Mutex::new(watcher),
        }
    }

    /// Names the step now running ("checking the key", "proving", …).
    pub fn step(&self, step: &'static str) {
        lock(&self.shared.0).step = step;
    }

    /// Takes the line away now, for good (before a report on stderr).
    pub fn finish(&self) {
        lock(&self.shared.0).done = true;
        self.shared.1.notify_all();
        let watcher = self
            .watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(w) = watcher {
            let _ = w.join();
        }
    }

    /// Whether the line was ever drawn (for tests).
    #[cfg(test)]
    fn shown(&self) -> bool {
        lock(&self.shared.0).shown
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The watcher thread: waits `delay` (or until the work is done), then redraws the line
/// every [`TICK`] until it is.
fn watch(shared: &(Mutex<State>, Condvar), what: &str, delay: Duration) {
    let (state, wake) = shared;
    let start = Instant::now();
    let mut s = lock(state);
    while !s.done {
        let Some(left) = delay.checked_sub(start.elapsed()) else {
            break;
        };
        s = wake
            .wait_timeout(s, left)
            .map_or_else(|e| e.into_inner().0, |r| r.0);
    }
    if s.done {
        return;
    }
    s.shown = true;
    // The work started `delay` ago: the elapsed time counts from then.
    let bar = ProgressBar::new_spinner().with_elapsed(start.elapsed());
    let style = ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    bar.set_style(style);
    while !s.done {
        bar.set_message(if s.step.is_empty() {
            what.to_string()
        } else {
            format!("{what}: {}", s.step)
        });
        drop(s);
        bar.tick();
        s = lock(state);
        if !s.done {
            s = wake
                .wait_timeout(s, TICK)
                .map_or_else(|e| e.into_inner().0, |r| r.0);
        }
    }
    drop(s);
    bar.finish_and_clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_work_shows_nothing_and_slow_work_a_line() {
        let p = Progress::start_if(true, "quick".into(), Duration::from_secs(5));
        p.step("proving");
        assert!(!p.shown());
        p.finish();
        let p = Progress::start_if(true, "slow".into(), Duration::from_millis(10));
        std::thread::sleep(Duration::from_millis(200));
        assert!(p.shown());
        drop(p);
        let p = Progress::start_if(false, "off".into(), Duration::ZERO);
        std::thread::sleep(Duration::from_millis(50));
        assert!(!p.shown());
    }
}
