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
    /// Notified (all waiters) whenever a pass leaves: what [`PassPermit::take_batch`] waits on.
    left: Condvar,
}

#[derive(Default)]
struct GateState {
    running: usize,
    /// Passes inside waiting in [`PassPermit::take_batch`], not yet on the device.
    waiting: usize,
    /// Partitions of the passes on the device (those that took their batch).
    on_device: usize,
    busy_since: Option<Instant>,
    busy: Duration,
}

/// One admitted pass; leaving the gate on drop.
pub(crate) struct PassPermit<'a> {
    gate: &'a PassGate,
    /// Its batch's partitions, once taken.
    partitions: usize,
}

impl PassGate {
    pub fn new(permits: usize) -> Self {
        Self {
            permits: permits.max(1),
            state: Mutex::new(GateState::default()),
            freed: Condvar::new(),
            left: Condvar::new(),
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
        PassPermit {
            gate: self,
            partitions: 0,
        }
    }

    /// Time with at least one pass running, including the current stretch.
    pub fn busy(&self) -> Duration {
        let s = self.lock();
        s.busy + s.busy_since.map_or(Duration::ZERO, |t| t.elapsed())
    }
}

impl PassPermit<'_> {
    /// This pass's batch, of `own` partitions already held and what `take`
    /// adds. `take(on_device, alone)` runs under the gate's lock, at once, then every
    /// `poll` and whenever a pass leaves, until it takes (returns `Some`); `on_device` is
    /// the partitions of the other passes on the device (inside, batch taken), and `take`
    /// must take when `alone` (no other pass on the device, so nothing to wait for). Of
    /// passes waiting here together with none on the device, the first asked goes on
    /// alone and the others then wait for it. The batch counts as on the device until
    /// the permit is dropped.
    pub fn take_batch<T>(
        &mut self,
        own: usize,
        poll: Duration,
        mut take: impl FnMut(usize, bool) -> Option<Vec<T>>,
    ) -> Vec<T> {
        let gate = self.gate;
        // Declared before the lock so that, on unwind, it drops after the lock's guard.
        let mut unwait = Unwait { gate, armed: false };
        let mut s = gate.lock();
        s.waiting += 1;
        unwait.armed = true;
        let taken = loop {
            // `running` counts this pass, and `waiting` this one and the others here.
            let alone = s.running == s.waiting;
            if let Some(t) = take(s.on_device, alone) {
                break t;
            }
            assert!(!alone, "take must take when alone");
            s = gate
                .left
                .wait_timeout(s, poll)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        s.waiting -= 1;
        unwait.armed = false;
        self.partitions = own + taken.len();
        s.on_device += self.partitions;
        taken
    }
}

/// Undoes a pass's `waiting` count when [`PassPermit::take_batch`] unwinds (a panicking
/// `take`): a count left raised would make every later pass think it is not alone, and
/// wait for a pass that is not there. Disarmed on the normal path.
struct Unwait<'a> {
    gate: &'a PassGate,
    armed: bool,
}

impl Drop for Unwait<'_> {
    fn drop(&mut self) {
        if self.armed {
            // The unwind poisoned the lock; the gate's state stays consistent, as in `lock`.
            self.gate.lock().waiting -= 1;
            self.gate.left.notify_all();
        }
    }
}

impl Drop for PassPermit<'_> {
    fn drop(&mut self) {
        let gate = self.gate;
        let mut s = gate.lock();
        s.running -= 1;
        s.on_device -= self.partitions;
        if s.running == 0 {
            if let Some(t) = s.busy_since.take() {
                s.busy += t.elapsed();
            }
        }
        drop(s);
        gate.freed.notify_one();
        gate.left.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::PassGate;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// `take` for a pass that wants `want` partitions beside another: takes from `queued`
    /// when it holds that many or when alone.
    fn take_from(
        queued: &mut Vec<u32>,
        want: usize,
        on_device: usize,
        alone: bool,
    ) -> Option<Vec<u32>> {
        (alone || queued.len() >= want.min(on_device)).then(|| std::mem::take(queued))
    }

    #[test]
    fn a_pass_takes_at_once_when_alone_and_sees_the_batch_on_the_device() {
        let gate = PassGate::new(2);
        let mut first = gate.enter();
        let mut asked = Vec::new();
        let batch = first.take_batch(1, Duration::from_secs(60), |on, alone| {
            asked.push((on, alone));
            Some(vec![7, 8, 9])
        });
        assert_eq!((batch, asked), (vec![7, 8, 9], vec![(0, true)]));
        // The second pass sees the first's 4 partitions on the device and waits until
        // its own batch is as large.
        let mut second = gate.enter();
        let mut queued = Vec::new();
        let mut seen = Vec::new();
        let batch = second.take_batch(1, Duration::from_millis(1), |on, alone| {
            seen.push(on);
            queued.push(seen.len() as u32);
            take_from(&mut queued, 3, on, alone)
        });
        assert_eq!(batch, [1, 2, 3]);
        assert!(seen.iter().all(|&on| on == 4), "{seen:?}");
        drop(first);
        // Alone now: takes at once, whatever is queued.
        drop(second);
        let mut third = gate.enter();
        let mut queued = vec![5];
        let batch = third.take_batch(1, Duration::from_secs(60), |on, alone| {
            take_from(&mut queued, 32, on, alone)
        });
        assert_eq!(batch, [5]);
    }

    /// A `take` that panics leaves no pass counted as waiting: the next pass alone on
    /// the gate is told so at once (not left waiting for a pass that is gone).
    #[test]
    fn a_panicking_take_leaves_the_gate_as_it_found_it() {
        let gate = PassGate::new(2);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut p = gate.enter();
            p.take_batch(1, Duration::ZERO, |_, _| -> Option<Vec<u32>> {
                panic!("take failed")
            });
        }));
        assert!(panicked.is_err());
        let mut next = gate.enter();
        let mut asked = Vec::new();
        let batch = next.take_batch(1, Duration::from_secs(60), |on, alone| {
            asked.push((on, alone));
            Some(vec![1u32])
        });
        assert_eq!((batch, asked), (vec![1], vec![(0, true)]));
    }

    #[test]
    fn a_waiting_pass_goes_on_when_the_pass_on_the_device_leaves() {
        let gate = PassGate::new(2);
        let mut first = gate.enter();
        first.take_batch(1, Duration::ZERO, |_, _| Some(Vec::<u32>::new()));
        let mut second = gate.enter();
        std::thread::scope(|s| {
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                drop(first);
            });
            // Never enough queued: goes on once the first pass leaves.
            let batch = second.take_batch(1, Duration::from_millis(1), |_, alone| {
                alone.then(|| vec![1u32])
            });
            assert_eq!(batch, [1]);
        });
    }

    /// Two passes inside, both waiting for batches that never fill: one goes on, and the
    /// other once it leaves (no deadlock).
    #[test]
    fn of_two_waiting_passes_one_goes_on() {
        let gate = PassGate::new(2);
        let order = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for i in 0..2 {
                let (gate, order) = (&gate, &order);
                s.spawn(move || {
                    let mut p = gate.enter();
                    p.take_batch(1, Duration::from_millis(1), |_, alone| {
                        alone.then(Vec::<u32>::new)
                    });
                    order.lock().unwrap().push((i, "on"));
                    std::thread::sleep(Duration::from_millis(20));
                    order.lock().unwrap().push((i, "off"));
                });
            }
        });
        let order = order.into_inner().unwrap();
        let steps: Vec<&str> = order.iter().map(|&(_, what)| what).collect();
        assert_eq!(steps, ["on", "off", "on", "off"], "{order:?}");
    }

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
