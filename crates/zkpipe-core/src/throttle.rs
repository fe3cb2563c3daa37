//! The memory-bandwidth throttle (the Phase 11 design's third intervention; DESIGN.md,
//! lesson 7): while a bandwidth-heavy burst runs — a CPU MSM, the pairing self-check, a
//! large witness's deserialisation, upload staging — the row loops of synthesis and reduce
//! step aside every N chunks, so that the burst gets the memory bus.
//!
//! Process-wide on purpose: memory bandwidth is shared by every thread of the process, so
//! the flag is too. [`configure`] sets the mode (default [`Mode::Off`]); [`burst`] raises
//! the flag for as long as its guard lives; row loops call [`check`] with their chunk
//! index.

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
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

static MODE: AtomicU8 = AtomicU8::new(0);
static EVERY: AtomicUsize = AtomicUsize::new(64);
static MAX_PAUSE_US: AtomicU64 = AtomicU64::new(2000);
/// Bursts running now.
static RAISED: AtomicUsize = AtomicUsize::new(0);
static BURSTS: AtomicU64 = AtomicU64::new(0);
static STEPS_ASIDE: AtomicU64 = AtomicU64::new(0);
static PAUSED_NS: AtomicU64 = AtomicU64::new(0);

/// Sets the mode, how often loops check (every `every` chunks, at least 1) and the longest
/// pause per check.
pub fn configure(mode: Mode, every: usize, max_pause: Duration) {
    EVERY.store(every.max(1), Ordering::Relaxed);
    MAX_PAUSE_US.store(max_pause.as_micros() as u64, Ordering::Relaxed);
    MODE.store(mode as u8, Ordering::Release);
}

/// The configured mode.
pub fn mode() -> Mode {
    match MODE.load(Ordering::Acquire) {
        1 => Mode::Yield,
        2 => Mode::Pause,
        _ => Mode::Off,
    }
}

/// The flag raised while the guard lives (nothing when the throttle is off).
#[must_use = "the flag is lowered when the guard drops"]
pub struct Burst(bool);

/// Raises the flag for a bandwidth-heavy burst.
pub fn burst() -> Burst {
    if mode() == Mode::Off {
        return Burst(false);
    }
    RAISED.fetch_add(1, Ordering::AcqRel);
    BURSTS.fetch_add(1, Ordering::Relaxed);
    Burst(true)
}

impl Drop for Burst {
    fn drop(&mut self) {
        if self.0 {
            RAISED.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Whether a burst is running.
pub fn raised() -> bool {
    RAISED.load(Ordering::Acquire) > 0
}

/// Called by a row loop at chunk `chunk`: every N-th chunk, steps aside while a burst runs.
/// One relaxed load when the throttle is off or the chunk is not a multiple of N.
#[inline]
pub fn check(chunk: usize) {
    if !chunk.is_multiple_of(EVERY.load(Ordering::Relaxed)) || !raised() {
        return;
    }
    step_aside();
}

#[cold]
fn step_aside() {
    let start = Instant::now();
    match mode() {
        Mode::Off => return,
        Mode::Yield => std::thread::yield_now(),
        Mode::Pause => {
            let max = Duration::from_micros(MAX_PAUSE_US.load(Ordering::Relaxed));
            while raised() && start.elapsed() < max {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }
    STEPS_ASIDE.fetch_add(1, Ordering::Relaxed);
    PAUSED_NS.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
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

/// The counters.
pub fn stats() -> Stats {
    Stats {
        bursts: BURSTS.load(Ordering::Relaxed),
        steps_aside: STEPS_ASIDE.load(Ordering::Relaxed),
        paused: Duration::from_nanos(PAUSED_NS.load(Ordering::Relaxed)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// One test for the process-wide state (tests in one binary share it).
    #[test]
    fn a_raised_flag_pauses_a_row_loop_and_lowering_it_releases_the_loop() {
        configure(Mode::Pause, 4, Duration::from_secs(10));
        let done = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let guard = burst();
        assert!(raised());
        let loop_thread = {
            let (done, stop) = (Arc::clone(&done), Arc::clone(&stop));
            std::thread::spawn(move || {
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
        let s = stats();
        assert!(s.bursts >= 1 && s.steps_aside >= 1);
        assert!(s.paused >= Duration::from_millis(90), "{s:?}");

        // A stuck flag holds a loop at most the longest pause per check.
        configure(Mode::Pause, 1, Duration::from_millis(5));
        let _stuck = burst();
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

        // Off: no flag, no pause.
        configure(Mode::Off, 1, Duration::from_secs(10));
        let _none = burst();
        assert!(!raised());
        let t = Instant::now();
        check(0);
        assert!(t.elapsed() < Duration::from_millis(50));
        assert_eq!("pause".parse::<Mode>(), Ok(Mode::Pause));
        assert!("fast"
            .parse::<Mode>()
            .unwrap_err()
            .contains("off, yield or pause"));
    }
}
