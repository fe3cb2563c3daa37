//! Stand-ins for builds without the `cuda` feature: the same API, and every call that
//! would touch a GPU fails with [`CudaError::NotBuilt`].

use crate::{CudaError, DeviceInfo};
use ark_ec::pairing::Pairing;
use ark_ff::PrimeField;
use std::marker::PhantomData;

/// A curve whose GPU paths exist (none do without the `cuda` feature).
pub trait GpuCurve: Pairing {}
impl GpuCurve for ark_bn254::Bn254 {}
impl GpuCurve for ark_bls12_381::Bls12_381 {}

/// Always 0.
pub fn device_count() -> usize {
    0
}

/// Always [`CudaError::NotBuilt`].
pub fn device_info(_device: usize) -> Result<DeviceInfo, CudaError> {
    Err(CudaError::NotBuilt)
}

/// Pinned host memory (never constructed without the `cuda` feature).
pub struct PinnedBuf(());

/// G1 points resident on the GPU (never constructed without the `cuda` feature).
pub struct ResidentG1<E: GpuCurve>(PhantomData<E>);
/// G2 points resident on the GPU (never constructed without the `cuda` feature).
pub struct ResidentG2<E: GpuCurve>(PhantomData<E>);
/// The GPU quotient stage (never constructed without the `cuda` feature).
pub struct GpuQuotient<E: GpuCurve>(PhantomData<E>);

/// Always [`CudaError::NotBuilt`].
pub fn msm_oneshot<E: GpuCurve>(
    _points: &[E::G1Affine],
    _scalars: &[<E::ScalarField as PrimeField>::BigInt],
) -> Result<E::G1, CudaError> {
    Err(CudaError::NotBuilt)
}

/// The GPU backend (never constructed without the `cuda` feature).
pub struct CudaBackend<E: zkpipe_core::Curve + GpuCurve>(PhantomData<E>);

impl<E: zkpipe_core::Curve + GpuCurve> CudaBackend<E> {
    /// Always [`CudaError::NotBuilt`].
    pub fn new(_key: &zkpipe_core::CompiledKey<E>, _device: usize) -> Result<Self, CudaError> {
        Err(CudaError::NotBuilt)
    }

    /// The GPU this backend runs on.
    pub fn device(&self) -> &DeviceInfo {
        unreachable!("a CudaBackend is never constructed without the `cuda` feature")
    }
}

impl<E: zkpipe_core::Curve + GpuCurve> zkpipe_core::Backend<E> for CudaBackend<E> {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn quotient(
        &self,
        _: &zkpipe_core::quotient::QuotientDomain<E::ScalarField>,
        _: &mut zkpipe_core::reduce::QapEvals<E::ScalarField>,
    ) -> Result<(), zkpipe_core::Error> {
        Err(not_built())
    }
    fn msm_g1(
        &self,
        _: &[E::G1Affine],
        _: &[zkpipe_core::backend::ScalarInt<E>],
    ) -> Result<E::G1, zkpipe_core::Error> {
        Err(not_built())
    }
    fn msm_g2(
        &self,
        _: &[E::G2Affine],
        _: &[zkpipe_core::backend::ScalarInt<E>],
    ) -> Result<E::G2, zkpipe_core::Error> {
        Err(not_built())
    }
}

fn not_built() -> zkpipe_core::Error {
    zkpipe_core::Error::Backend {
        backend: "cuda",
        message: CudaError::NotBuilt.to_string(),
    }
}
