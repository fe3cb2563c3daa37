//! The device gate: admits a few device passes at once, held only around device work
//! (lesson 3), and measures the device's busy time as the union of the passes inside.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A counting gate for device passes: at most `permits` at once. The device is busy while
/// at least one pass runs; overlapping passes count once.
pub(crate) struct PassGate {
    permits: usize,
    state: Mutex<GateState>,
    freed: Condvar,
}

#[derive(Default)]
struct GateState {
    running: usize,
    busy_since: Option<Instant>,
    busy: Duration,
}

/// One admitted pass; leaving the gate on drop.
pub(crate) struct PassPermit<'a>(&'a PassGate);

impl PassGate {
    pub fn new(permits: usize) -> Self {
        Self {
            permits: permits.max(1),
            state: Mutex::new(GateState::default()),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for a free permit.
    pub fn enter(&self) -> PassPermit<'_> {
        let mut s = self.lock();
        while s.running >= self.permits {
            s = self.freed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.running += 1;
        if s.running == 1 {
            s.busy_since = Some(Instant::now());
        }
        PassPermit(self)
    }

    /// Time with at least one pass running, including the current stretch.
    pub fn busy(&self) -> Duration {
        let s = self.lock();
        s.busy + s.busy_since.map_or(Duration::ZERO, |t| t.elapsed())
    }
}

impl Drop for PassPermit<'_> {
    fn drop(&mut self) {
        let gate = self.0;
        let mut s = gate.lock();
        s.running -= 1;
        if s.running == 0 {
            if let Some(t) = s.busy_since.take() {
                s.busy += t.elapsed();
            }
        }
        drop(s);
        gate.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::PassGate;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn the_gate_admits_at_most_its_permits_and_counts_overlaps_once() {
        let gate = PassGate::new(2);
        let (inside, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let passes: Vec<Duration> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..6)
                .map(|_| {
                    s.spawn(|| {
                        let p = gate.enter();
                        let t = std::time::Instant::now();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        let d = t.elapsed();
                        drop(p);
                        d
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert_eq!(
            most.load(Ordering::SeqCst),
            2,
            "two passes at once, never three"
        );
        // Two passes were inside together, so busy time (their union) is less than the
        // passes' sum, and at least the longest one.
        let busy = gate.busy();
        assert!(busy < passes.iter().sum(), "{busy:?} vs {passes:?}");
        assert!(
            busy >= *passes.iter().max().unwrap(),
            "{busy:?} vs {passes:?}"
        );
    }
}
