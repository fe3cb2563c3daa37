//! The device seam: the few verbs a proof needs from whatever runs the heavy math.
//! The CPU backend (arkworks + rayon) is the reference and the test oracle for others.

use crate::curve::Curve;
use crate::error::Error;
use crate::pippenger::BatchAffineMsm;
use crate::quotient::{self, QuotientDomain};
use crate::reduce::QapEvals;
use ark_ff::PrimeField;

/// Scalars as the MSM wants them: standard-form integers.
pub type ScalarInt<E> = <<E as ark_ec::pairing::Pairing>::ScalarField as PrimeField>::BigInt;

/// Where NTTs and MSMs run.
pub trait Backend<E: Curve>: Send + Sync {
    /// Short name for messages and timings ("cpu", "cuda").
    fn name(&self) -> &'static str;

    /// The quotient stage: a, b, c on the domain → h = a·b − c on the coset, in `evals.a`.
    fn quotient(
        &self,
        domain: &QuotientDomain<E::ScalarField>,
        evals: &mut QapEvals<E::ScalarField>,
    ) -> Result<(), Error>;

    /// Σ scalarsᵢ·basesᵢ in G1 (lengths must match).
    fn msm_g1(&self, bases: &[E::G1Affine], scalars: &[ScalarInt<E>]) -> Result<E::G1, Error>;

    /// Σ scalarsᵢ·basesᵢ in G2 (lengths must match).
    fn msm_g2(&self, bases: &[E::G2Affine], scalars: &[ScalarInt<E>]) -> Result<E::G2, Error>;
}

/// arkworks for NTTs and [`crate::pippenger`]'s batch-affine MSM, on the current rayon pool.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuBackend;

fn check_lengths(bases: usize, scalars: usize) -> Result<(), Error> {
    if bases != scalars {
        return Err(Error::Backend {
            backend: "cpu",
            message: format!("MSM with {bases} bases and {scalars} scalars"),
        });
    }
    Ok(())
}

impl<E: Curve> Backend<E> for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn quotient(
        &self,
        domain: &QuotientDomain<E::ScalarField>,
        evals: &mut QapEvals<E::ScalarField>,
    ) -> Result<(), Error> {
        quotient::quotient(domain, evals);
        Ok(())
    }

    fn msm_g1(&self, bases: &[E::G1Affine], scalars: &[ScalarInt<E>]) -> Result<E::G1, Error> {
        check_lengths(bases.len(), scalars.len())?;
        Ok(E::G1Affine::msm_batch_affine(bases, scalars))
    }

    fn msm_g2(&self, bases: &[E::G2Affine], scalars: &[ScalarInt<E>]) -> Result<E::G2, Error> {
        check_lengths(bases.len(), scalars.len())?;
        Ok(E::G2Affine::msm_batch_affine(bases, scalars))
    }
}
