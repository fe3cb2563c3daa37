//! The memory-bandwidth throttle: while a bandwidth-heavy burst runs — a CPU MSM, the
//! pairing self-check, a large witness's deserialisation, upload staging — the row loops
//! of synthesis and reduce step aside every N chunks, so that the burst gets the memory
//! bus. Off by default: it gained nothing measurable where it was tried
//! (lab/experiments/018d-throttle.md).
//!
//! A [`Throttle`] is a value: an engine owns one (`Arc`) with its own mode and counters,
//! and runs its threads under it ([`Throttle::enter`]; its rayon pools enter it in every
//! worker). The row loops and bursts of the library ([`check`], [`burst`]) act on the
//! throttle the current thread runs under, and on nothing where it runs under none (a
//! one-shot proof), so two engines in one process throttle their own threads only.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a row loop does when it finds the flag raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Nothing: the flag is never raised.
    #[default]
    Off,
    /// One `yield_now` per check (the reference's hint: it gives the core away only if
    /// another thread wants it).
    Yield,
    /// Sleep in short steps until the flag is lowered, at most the configured longest
    /// pause per check: the loop really stops reading memory meanwhile.
    Pause,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(Self::Off),
            "yield" => Ok(Self::Yield),
            "pause" => Ok(Self::Pause),
            _ => Err(format!("throttle {s:?}: expected off, yield or pause")),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Off => "off",
            Self::Yield => "yield",
            Self::Pause => "pause",
        })
    }
}

/// One throttle: its settings, the flag (bursts running now) and its counters.
#[derive(Debug)]
pub struct Throttle {
    mode: Mode,
    every: usize,
    max_pause: Duration,
    /// Bursts running now.
    raised: AtomicUsize,
    bursts: AtomicU64,
    steps_aside: AtomicU64,
    paused_ns: AtomicU64,
}

impl Default for Throttle {
    /// Off.
    fn default() -> Self {
        Self::new(Mode::Off, 64, Duration::from_millis(2))
    }
}

thread_local! {
    /// The throttle this thread runs under ([`Throttle::enter`]).
    static CURRENT: RefCell<Option<Arc<Throttle>>> = const { RefCell::new(None) };
}

impl Throttle {
    /// A throttle in `mode` whose loops check every `every` chunks (at least 1) and pause
    /// at most `max_pause` per check.
    pub fn new(mode: Mode, every: usize, max_pause: Duration) -> Self {
        Self {
            mode,
            every: every.max(1),
            max_pause,
            raised: AtomicUsize::new(0),
            bursts: AtomicU64::new(0),
            steps_aside: AtomicU64::new(0),
            paused_ns: AtomicU64::new(0),
        }
    }

    /// Its mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Runs the current thread under this throttle until the guard drops (the one it ran
    /// under before, if any, comes back then).
    #[must_use = "the thread leaves the throttle when the guard drops"]
    pub fn enter(self: &Arc<Self>) -> Entered {
        let before = CURRENT.with(|c| c.replace(Some(Arc::clone(self))));
        Entered { before }
    }

    /// Raises the flag for a bandwidth-heavy burst (nothing when the throttle is off).
    pub fn burst(self: &Arc<Self>) -> Burst {
        if self.mode == Mode::Off {
            return Burst(None);
        }
        self.raised.fetch_add(1, Ordering::AcqRel);
        self.bursts.fetch_add(1, Ordering::Relaxed);
        Burst(Some(Arc::clone(self)))
    }

    /// Whether a burst is running.
    pub fn raised(&self) -> bool {
        self.raised.load(Ordering::Acquire) > 0
    }

    /// Called by a row loop at chunk `chunk`: every N-th chunk, steps aside while a burst
    /// runs.
    #[inline]
    pub fn check(&self, chunk: usize) {
        if !chunk.is_multiple_of(self.every) || !self.raised() {
            return;
        }
        self.step_aside();
    }

    #[cold]
    fn step_aside(&self) {
        let start = Instant::now();
        match self.mode {
            Mode::Off => return,
            Mode::Yield => std::thread::yield_now(),
            Mode::Pause => {
                while self.raised() && start.elapsed() < self.max_pause {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
        self.steps_aside.fetch_add(1, Ordering::Relaxed);
        let paused = start.elapsed().as_nanos() as u64;
        self.paused_ns.fetch_add(paused, Ordering::Relaxed);
    }

    /// Its counters since it was made.
    pub fn stats(&self) -> Stats {
        Stats {
            bursts: self.bursts.load(Ordering::Relaxed),
            steps_aside: self.steps_aside.load(Ordering::Relaxed),
            paused: Duration::from_nanos(self.paused_ns.load(Ordering::Relaxed)),
        }
    }
}

/// A thread running under a throttle ([`Throttle::enter`]).
pub struct Entered {
    before: Option<Arc<Throttle>>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let before = self.before.take();
        let _ = CURRENT.try_with(|c| *c.borrow_mut() = before);
    }
}

/// The flag raised while the guard lives (nothing when the throttle is off).
#[must_use = "the flag is lowered when the guard drops"]
pub struct Burst(Option<Arc<Throttle>>);

impl Drop for Burst {
    fn drop(&mut self) {
        if let Some(t) = &self.0 {
            t.raised.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Raises the flag of the throttle the current thread runs under for a bandwidth-heavy
/// burst (nothing under none, or under one that is off).
pub fn burst() -> Burst {
    // `try_with`: a thread being torn down has no throttle any more, and no burst.
    CURRENT
        .try_with(|c| c.borrow().as_ref().map(Throttle::burst))
        .ok()
        .flatten()
        .unwrap_or(Burst(None))
}

/// Called by a row loop at chunk `chunk`: [`Throttle::check`] of the throttle the current
/// thread runs under, if any.
#[inline]
pub fn check(chunk: usize) {
    let _ = CURRENT.try_with(|c| {
        if let Some(t) = &*c.borrow() {
            t.check(chunk);
        }
    });
}

/// Counters since the start: bursts raised, checks that stepped aside, time spent aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Bursts raised.
    pub bursts: u64,
    /// Checks that found the flag up and stepped aside.
    pub steps_aside: u64,
    /// Time row loops spent aside.
    pub paused: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn a_raised_flag_pauses_a_row_loop_and_lowering_it_releases_the_loop() {
        let throttle = Arc::new(Throttle::new(Mode::Pause, 4, Duration::from_secs(10)));
        let done = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let guard = throttle.burst();
        assert!(throttle.raised());
        let loop_thread = {
            let (done, stop, throttle) = (Arc::clone(&done), Arc::clone(&stop), throttle.clone());
            std::thread::spawn(move || {
                let _in = throttle.enter();
                let mut chunk = 0;
                while !stop.load(Ordering::Relaxed) {
                    check(chunk);
                    chunk += 1;
                    done.store(chunk, Ordering::Relaxed);
                }
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        // Chunk 0 is a multiple of 4: the loop is held there while the flag is up.
        assert_eq!(
            done.load(Ordering::Relaxed),
            0,
            "the loop ran during the burst"
        );
        drop(guard);
        let t = Instant::now();
        while done.load(Ordering::Relaxed) < 1000 {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "the loop was not released"
            );
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Relaxed);
        loop_thread.join().unwrap();
        let s = throttle.stats();
        assert!(s.bursts >= 1 && s.steps_aside >= 1);
        assert!(s.paused >= Duration::from_millis(90), "{s:?}");

        // A stuck flag holds a loop at most the longest pause per check.
        let short = Arc::new(Throttle::new(Mode::Pause, 1, Duration::from_millis(5)));
        let _in = short.enter();
        let _stuck = burst();
        assert!(
            short.raised(),
            "burst() raises the current thread's throttle"
        );
        let t = Instant::now();
        for chunk in 0..10 {
            check(chunk);
        }
        let took = t.elapsed();
        assert!(
            took >= Duration::from_millis(50) && took < Duration::from_secs(2),
            "{took:?}"
        );
        drop(_stuck);
        drop(_in);

        // Off: no flag, no pause; and a thread under no throttle is never held.
        let off = Arc::new(Throttle::new(Mode::Off, 1, Duration::from_secs(10)));
        let _none = off.burst();
        assert!(!off.raised());
        let t = Instant::now();
        off.check(0);
        let _stuck = short.burst();
        check(0);
        assert!(t.elapsed() < Duration::from_millis(50));
        assert_eq!(off.stats().bursts, 0);
        assert_eq!("pause".parse::<Mode>(), Ok(Mode::Pause));
        assert!("fast"
            .parse::<Mode>()
            .unwrap_err()
            .contains("off, yield or pause"));
    }

    /// Two throttles count their own bursts, and a thread acts on the one it runs under.
    #[test]
    fn throttles_are_independent() {
        let a = Arc::new(Throttle::new(Mode::Yield, 1, Duration::from_millis(1)));
        let b = Arc::new(Throttle::new(Mode::Pause, 1, Duration::from_millis(1)));
        {
            let _in = a.enter();
            let _burst = burst();
            assert!(a.raised() && !b.raised());
            {
                let _inner = b.enter();
                drop(burst());
            }
            // Back under a.
            drop(burst());
        }
        assert_eq!((a.stats().bursts, b.stats().bursts), (2, 1));
        assert!(!a.raised() && !b.raised());
    }
}
