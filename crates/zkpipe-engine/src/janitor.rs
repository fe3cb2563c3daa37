//! The janitor: evicts keys idle past their timeout and forgets finished jobs beyond
//! their retention (time, count and bytes; the oldest first), on a thread of its own.

use crate::job_store::Retention;
use crate::jobs::JobTable;
use crate::keys::store::KeyStore;
use crate::memory::Signal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The janitor (see the module doc).
pub(crate) struct Janitor {
    pub keys: Arc<KeyStore>,
    pub jobs: Arc<JobTable>,
    pub signal: Arc<Signal>,
    pub key_idle_timeout: Duration,
    pub retention: Retention,
    pub stop: Arc<AtomicBool>,
}

impl Janitor {
    /// Runs until `stop` is set.
    pub fn run(&self) {
        while !self.stop.load(Ordering::Acquire) {
            let seen = self.signal.generation();
            self.keys.evict_idle(self.key_idle_timeout);
            self.jobs.forget_finished(&self.retention);
            self.signal.wait_past(seen, Duration::from_millis(500));
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
