//! Whether the MSMs of this process do the same work for every witness
//! (`zkpipe prove --constant-work`, the daemon's `pipeline.constant_work`).
//!
//! By default they do not: zero scalars are skipped (copied out first on the CPU, never
//! sorted into a bucket on the GPU), and a scalar of 1 costs one addition. Circom
//! witnesses are mostly 0s and 1s, so this is most of a small proof's MSM time, and a
//! proof's validity never depends on it. The price is that the time a proof takes says
//! something about how many of the witness's values are 0, 1 or small. Where an observer
//! of proving times should learn as little as possible about the witness (a prover that
//! serves one secret's proofs to others who see the timing), turn it on.
//!
//! Turned on, every key is bound with a random mask ([`crate::msm::mask`]): each proof's
//! MSMs read w + m and h + m′ instead of w and h, and the mask's sums, computed once at
//! binding, come off the results. Masked scalars look uniformly random whatever the
//! witness is, so the MSMs' work (entries, bucket occupancy, partial sums) does not
//! follow the values. On an H100 machine (experiment 023) the GPU's device stage varied
//! by 1.02–1.10× over six witness distributions (1.7–6.6× with it off), and the CPU's
//! pass by 1.02–1.06× (7–17×). A proof then costs what a random-valued witness costs by
//! default; binding a key costs one proof's MSMs more. The CPU's MSMs also treat every
//! scalar as full-width here (zero scalars kept, every window run, zero digits added
//! into a discarded bucket), which costs nothing on masked scalars;
//! `ZKPIPE_CUDA_CONSTANT=full` gives the GPU that mode instead of the mask, for
//! comparison (1.4–1.7×).

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
