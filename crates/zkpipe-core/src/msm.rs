//! Stage 3, msm: the five multi-scalar multiplications of a Groth16 proof.

use crate::backend::{Backend, ScalarInt};
use crate::curve::Curve;
use crate::error::Error;
use crate::key::CompiledKey;
use crate::timings::{Stage, Timings};
use ark_ff::PrimeField;
use rayon::prelude::*;

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

/// Field elements → standard-form integers, in parallel.
pub fn to_scalars<F: PrimeField>(v: &[F]) -> Vec<F::BigInt> {
    v.par_iter().map(|x| x.into_bigint()).collect()
}

/// Runs the five MSMs on `backend`, timing each.
pub fn msm<E: Curve, B: Backend<E> + ?Sized>(
    backend: &B,
    key: &CompiledKey<E>,
    w: &[ScalarInt<E>],
    h: &[ScalarInt<E>],
    t: &mut Timings,
) -> Result<MsmResults<E>, Error> {
    let p = &key.points;
    let private = &w[key.n_public + 1..];
    Ok(MsmResults {
        a: t.time(Stage::MsmA, || backend.msm_g1(&p.a, w))?,
        b1: t.time(Stage::MsmB1, || backend.msm_g1(&p.b1, w))?,
        b2: t.time(Stage::MsmB2, || backend.msm_g2(&p.b2, w))?,
        c: t.time(Stage::MsmC, || backend.msm_g1(&p.c, private))?,
        h: t.time(Stage::MsmH, || backend.msm_g1(&p.h, h))?,
    })
}
