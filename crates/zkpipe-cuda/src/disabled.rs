//! Stand-ins for builds without the `cuda` feature: same API, every call fails with
//! [`CudaError::NotBuilt`].

use crate::CudaError;
use ark_ec::pairing::Pairing;
use ark_ff::PrimeField;
use std::marker::PhantomData;

/// A curve whose G1 MSM can run on the GPU (none without the `cuda` feature).
pub trait GpuCurve: Pairing {}
impl GpuCurve for ark_bn254::Bn254 {}
impl GpuCurve for ark_bls12_381::Bls12_381 {}

/// G1 points resident on the GPU (never constructed without the `cuda` feature).
pub struct ResidentG1<E: GpuCurve> {
    _curve: PhantomData<E>,
}

impl<E: GpuCurve> ResidentG1<E> {
    /// Always [`CudaError::NotBuilt`].
    pub fn upload(_points: &[E::G1Affine]) -> Result<Self, CudaError> {
        Err(CudaError::NotBuilt)
    }

    /// Always [`CudaError::NotBuilt`].
    pub fn msm(
        &self,
        _scalars: &[<E::ScalarField as PrimeField>::BigInt],
    ) -> Result<E::G1, CudaError> {
        Err(CudaError::NotBuilt)
    }
}

/// Always [`CudaError::NotBuilt`].
pub fn msm_oneshot<E: GpuCurve>(
    _points: &[E::G1Affine],
    _scalars: &[<E::ScalarField as PrimeField>::BigInt],
) -> Result<E::G1, CudaError> {
    Err(CudaError::NotBuilt)
}
