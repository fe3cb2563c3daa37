//! Step 3, msm: the five sums a Groth16 proof needs, and the CPU's algorithm for them.
//! A device computes them in its pass ([`crate::device::BoundKey::pass`]); the CPU's
//! batch-affine Pippenger is in [`pippenger`] (its parts in the private modules beside
//! it, re-exported there: plan, adder, dispatch, tree, buckets, and the IFMA lanes).
//! A key larger than a device's budget streams its points in chunks: [`stream_plan`] cuts
//! them, [`streamed`] runs a batch of proofs' MSMs chunk by chunk on the CPU.

use crate::curve::Curve;
use ark_ff::PrimeField;
use rayon::prelude::*;

mod adder;
mod buckets;
mod dispatch;
#[cfg(target_arch = "x86_64")]
mod ifma;
pub mod mask;
pub mod pippenger;
mod plan;
pub mod stream_plan;
pub mod streamed;
mod tree;

pub use plan::MsmOptions;

/// Scalars as the MSM wants them: standard-form integers.
pub type ScalarInt<E> = <<E as ark_ec::pairing::Pairing>::ScalarField as PrimeField>::BigInt;

/// Field elements → standard-form integers into `out` (cleared first; its capacity is reused).
/// A row loop: it steps aside for bandwidth-heavy bursts ([`crate::throttle`]).
///
/// Written in place by the pool's threads, without zeroing `out` first: a fresh 2^20-signal
/// vector (32 MiB) is then first touched, page by page, on every core instead of on one.
pub fn scalars_into<F: PrimeField>(v: &[F], out: &mut Vec<F::BigInt>) {
    const CHUNK: usize = 4096;
    v.par_iter()
        .enumerate()
        .map(|(i, x)| {
            if i % CHUNK == 0 {
                crate::throttle::check(i / CHUNK);
            }
            x.into_bigint()
        })
        .collect_into_vec(out);
}

/// The sums a device pass produces; `b2` is `None` when the G2 MSM is left to the tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceSums<E: Curve> {
    /// Σ wᵢ·Aᵢ.
    pub a: E::G1,
    /// Σ wᵢ·B₁ᵢ.
    pub b1: E::G1,
    /// Σ wᵢ·B₂ᵢ, if computed on the device.
    pub b2: Option<E::G2>,
    /// Σ wᵢ·Cᵢ over private signals.
    pub c: E::G1,
    /// Σ hⱼ·Hⱼ.
    pub h: E::G1,
}

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
