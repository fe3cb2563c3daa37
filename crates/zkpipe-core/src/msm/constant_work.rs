//! Whether the MSMs of this process give every witness value full-width work
//! (`zkpipe prove --constant-work`, the daemon's `pipeline.constant_work`).
//!
//! By default they do not: zero scalars are skipped (copied out first on the CPU, never
//! sorted into a bucket on the GPU), and a scalar of 1 costs one addition. Circom
//! witnesses are mostly 0s and 1s, so this is most of a small proof's MSM time, and a
//! proof's validity never depends on it. The price is that the time a proof takes says
//! something about how many of the witness's values are 0, 1 or small. Where an observer
//! of proving times should learn as little as possible about the witness (a prover that
//! serves one secret's proofs to others who see the timing), turn it on: every scalar is then
//! treated as a full-width value (the GPU puts zero digits into a discarded bucket and
//! adds every partial sum; the CPU keeps zero scalars and adds zero digits into a
//! discarded bucket). What remains value-dependent is how entries fall into buckets: on
//! the GPU the spread of MSM times over witness distributions narrows from ~5× to
//! 2–2.5×, not to none (experiment 019).

use std::sync::atomic::{AtomicBool, Ordering};

static ON: AtomicBool = AtomicBool::new(false);

/// Turns constant-work MSMs on or off for the whole process (set it before proving).
pub fn set(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Whether constant-work MSMs are on.
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}
