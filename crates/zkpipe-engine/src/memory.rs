//! Memory budgets with RAII reservations: admission before allocation.
//!
//! A [`MemoryBudget`] is a byte limit; [`MemoryBudget::try_reserve`] either takes bytes
//! from it at once or says no (the caller decides whether to wait, evict or reject).
//! A [`Reservation`] gives its bytes back when dropped, can shrink, and can be merged.
//! Every change bumps a [`Signal`] that waiters (the admission loop) sleep on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A generation counter to sleep on: "something changed, look again".
#[derive(Debug, Default)]
pub struct Signal {
    generation: Mutex<u64>,
    cond: Condvar,
}

impl Signal {
    /// Wakes every waiter.
    pub fn notify(&self) {
        let mut g = self.generation.lock().unwrap_or_else(|e| e.into_inner());
        *g += 1;
        self.cond.notify_all();
    }

    /// The current generation, to pass to [`Signal::wait_past`].
    pub fn generation(&self) -> u64 {
        *self.generation.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps until the generation moves past `seen` or `timeout` elapses.
    pub fn wait_past(&self, seen: u64, timeout: Duration) {
        let g = self.generation.lock().unwrap_or_else(|e| e.into_inner());
        drop(self.cond.wait_timeout_while(g, timeout, |g| *g == seen));
    }
}

/// A byte budget (host memory or one device's memory).
#[derive(Debug)]
pub struct MemoryBudget {
    name: String,
    limit: u64,
    used: AtomicU64,
    signal: Arc<Signal>,
}

impl MemoryBudget {
    /// A budget of `limit` bytes named `name` (e.g. "host memory"); changes notify `signal`.
    pub fn new(name: impl Into<String>, limit: u64, signal: Arc<Signal>) -> Arc<Self> {
        Arc::new(Self {
            name: name.into(),
            limit,
            used: AtomicU64::new(0),
            signal,
        })
    }

    /// The budget's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The limit in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes reserved now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// Whether `bytes` could ever be reserved (at most the whole budget).
    pub fn could_ever_fit(&self, bytes: u64) -> bool {
        bytes <= self.limit
    }

    /// Whether `bytes` more would fit now (no reservation is made).
    pub fn has_room(&self, bytes: u64) -> bool {
        self.used()
            .checked_add(bytes)
            .is_some_and(|n| n <= self.limit)
    }

    /// Reserves `bytes` if they fit now.
    pub fn try_reserve(self: &Arc<Self>, bytes: u64) -> Option<Reservation> {
        let mut used = self.used.load(Ordering::Acquire);
        loop {
            let next = used.checked_add(bytes).filter(|&n| n <= self.limit)?;
            match self
                .used
                .compare_exchange_weak(used, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    return Some(Reservation {
                        budget: Arc::clone(self),
                        bytes,
                    })
                }
                Err(now) => used = now,
            }
        }
    }

    /// Reserves `bytes`, waiting for them to be released, up to `timeout`.
    pub fn reserve_wait(self: &Arc<Self>, bytes: u64, timeout: Duration) -> Option<Reservation> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let seen = self.signal.generation();
            if let Some(r) = self.try_reserve(bytes) {
                return Some(r);
            }
            let now = std::time::Instant::now();
            if now >= deadline || !self.could_ever_fit(bytes) {
                return None;
            }
            self.signal
                .wait_past(seen, (deadline - now).min(Duration::from_millis(50)));
        }
    }

    fn release(&self, bytes: u64) {
        if bytes > 0 {
            self.used.fetch_sub(bytes, Ordering::AcqRel);
            self.signal.notify();
        }
    }
}

/// Bytes held from a [`MemoryBudget`]; given back on drop.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl Reservation {
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Gives back `bytes` of this reservation now (at most what it holds).
    pub fn release(&mut self, bytes: u64) {
        let b = bytes.min(self.bytes);
        self.bytes -= b;
        self.budget.release(b);
    }

    /// Splits `bytes` off into a reservation of their own (at most what it holds).
    pub fn split(&mut self, bytes: u64) -> Reservation {
        let b = bytes.min(self.bytes);
        self.bytes -= b;
        Reservation {
            budget: Arc::clone(&self.budget),
            bytes: b,
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_are_returned_on_drop_and_never_exceed_the_limit() {
        let b = MemoryBudget::new("host memory", 100, Arc::default());
        let r1 = b.try_reserve(60).unwrap();
        assert!(b.try_reserve(50).is_none());
        let mut r2 = b.try_reserve(40).unwrap();
        assert_eq!(b.used(), 100);
        r2.release(30);
        assert_eq!(b.used(), 70);
        let r3 = r2.split(5);
        assert_eq!((r2.bytes(), r3.bytes()), (5, 5));
        drop((r1, r2, r3));
        assert_eq!(b.used(), 0);
        assert!(!b.could_ever_fit(101));
    }

    #[test]
    fn a_blocked_reserve_wakes_on_release() {
        let b = MemoryBudget::new("host memory", 10, Arc::default());
        let r = b.try_reserve(10).unwrap();
        let b2 = Arc::clone(&b);
        let waiter = std::thread::spawn(move || b2.reserve_wait(5, Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(20));
        drop(r);
        assert_eq!(waiter.join().unwrap().map(|r| r.bytes()), Some(5));
        assert!(b.reserve_wait(11, Duration::from_secs(30)).is_none());
    }
}
