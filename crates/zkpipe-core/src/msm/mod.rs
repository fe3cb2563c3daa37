//! Stage 3, msm: the five sums a Groth16 proof needs. They are computed by
//! [`crate::stages::device_stage`] (and [`crate::stages::tail_stage`] for `[B]₂`) on a
//! [`crate::Backend`]; the CPU algorithm is in [`pippenger`]
//! (its parts in the private modules beside it, re-exported there).

use crate::curve::Curve;

mod adder;
mod buckets;
mod dispatch;
#[cfg(target_arch = "x86_64")]
mod ifma;
pub mod pippenger;
mod plan;
mod tree;

/// The five sums, before randomization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsmResults<E: Curve> {
    /// Σ wᵢ·Aᵢ.
    pub a: E::G1,
    /// Σ wᵢ·B₁ᵢ.
    pub b1: E::G1,
    /// Σ wᵢ·B₂ᵢ.
    pub b2: E::G2,
    /// Σ wᵢ·Cᵢ over private signals.
    pub c: E::G1,
    /// Σ hⱼ·Hⱼ.
    pub h: E::G1,
}
