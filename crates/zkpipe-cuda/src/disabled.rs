//! Stand-ins for builds without the `cuda` feature: the seam API of a CUDA build, where
//! nothing that would touch a GPU can be made ([`CudaError::NotBuilt`]).

use crate::{CudaError, CudaOptions, GpuInfo, HostWait};
use ark_ec::pairing::Pairing;
use std::convert::Infallible;
use std::marker::PhantomData;
use std::sync::Arc;
use zkpipe_core::device::G1Set;
use zkpipe_core::msm::ScalarInt;
use zkpipe_core::reduce::QapEvals;
use zkpipe_core::{BindOptions, BoundKey, Caps, CompiledKey, Curve, Error};

/// A curve whose GPU paths exist (none run without the `cuda` feature).
pub trait GpuCurve: Pairing {}
impl GpuCurve for ark_bn254::Bn254 {}
impl GpuCurve for ark_bls12_381::Bls12_381 {}

/// Always 0.
pub fn device_count() -> usize {
    0
}

/// Always [`CudaError::NotBuilt`].
pub fn device_info(_device: usize) -> Result<GpuInfo, CudaError> {
    Err(CudaError::NotBuilt)
}

/// Always [`CudaError::NotBuilt`].
pub fn set_host_wait(_device: usize, _wait: HostWait) -> Result<(), CudaError> {
    Err(CudaError::NotBuilt)
}

/// A key bound to a GPU (never made without the `cuda` feature).
pub struct CudaBound<E: Curve + GpuCurve> {
    never: Infallible,
    _curve: PhantomData<E>,
}

impl<E: Curve + GpuCurve> CudaBound<E> {
    /// Always [`CudaError::NotBuilt`].
    pub fn new(
        _key: Arc<CompiledKey<E>>,
        _gpu: usize,
        _cuda: &CudaOptions,
        _bind: &BindOptions,
    ) -> Result<Self, CudaError> {
        Err(CudaError::NotBuilt)
    }

    /// Always [`CudaError::NotBuilt`].
    pub fn with_budget(
        _key: Arc<CompiledKey<E>>,
        _gpu: usize,
        _cuda: &CudaOptions,
        _bind: &BindOptions,
        _budget: u64,
    ) -> Result<Self, CudaError> {
        Err(CudaError::NotBuilt)
    }

    /// The GPU's index.
    pub fn gpu(&self) -> usize {
        match self.never {}
    }

    /// The GPU (free memory as of the binding).
    pub fn info(&self) -> &GpuInfo {
        match self.never {}
    }
}

impl<E: Curve + GpuCurve> BoundKey<E> for CudaBound<E> {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn key(&self) -> &Arc<CompiledKey<E>> {
        match self.never {}
    }

    fn caps(&self) -> Caps {
        match self.never {}
    }

    fn quotient(&self, _evals: &mut QapEvals<E::ScalarField>) -> Result<(), Error> {
        match self.never {}
    }

    fn msm_g1(&self, _set: G1Set, _scalars: &[ScalarInt<E>]) -> Result<E::G1, Error> {
        match self.never {}
    }

    fn msm_g2(&self, _scalars: &[ScalarInt<E>]) -> Result<E::G2, Error> {
        match self.never {}
    }
}

/// A dev key's fixed-base multiplications on a GPU (never made without the `cuda`
/// feature).
pub struct GpuFixedBase<E: Curve + GpuCurve> {
    never: Infallible,
    _curve: PhantomData<E>,
}

impl<E: Curve + GpuCurve> GpuFixedBase<E> {
    /// Always [`CudaError::NotBuilt`].
    pub fn new(_gpu: usize) -> Result<Self, CudaError> {
        Err(CudaError::NotBuilt)
    }
}

impl<E: Curve + GpuCurve> zkpipe_core::setup::FixedBase<E> for GpuFixedBase<E> {
    fn encode(&self, _scalars: &[E::ScalarField], _g2: bool, _out: &mut [u8]) -> Result<(), Error> {
        match self.never {}
    }
}

#[cfg(test)]
mod tests {
    use crate::{CudaBound, CudaDevices, CudaError};
    use std::sync::Arc;
    use zkpipe_core::key::PointChecks;
    use zkpipe_core::{Bn254, CompiledKey};
    use zkpipe_formats::zkey::ZkeyFile;

    /// Without the `cuda` feature nothing binds, and the error says how to get CUDA.
    #[test]
    fn without_the_feature_everything_says_not_built() {
        let opts = crate::CudaOptions::default();
        assert!(matches!(CudaDevices::new(opts), Err(CudaError::NotBuilt)));
        assert_eq!(crate::device_count(), 0);
        assert!(matches!(crate::device_info(0), Err(CudaError::NotBuilt)));
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/bn254/multi_public/circuit.zkey"
        );
        let zkey = ZkeyFile::open(path).unwrap();
        let key = CompiledKey::<Bn254>::compile(&zkey, PointChecks::Trusted).unwrap();
        let bind = zkpipe_core::BindOptions::default();
        let err = CudaBound::new(Arc::new(key), 0, &opts, &bind)
            .err()
            .unwrap();
        assert!(matches!(err, CudaError::NotBuilt));
        let core = err.on_gpu(0);
        assert!(core
            .to_string()
            .starts_with("cuda:0: this zkpipe was built without CUDA"));
        let source = std::error::Error::source(&core).unwrap();
        assert!(matches!(
            source.downcast_ref::<CudaError>(),
            Some(CudaError::NotBuilt)
        ));
    }
}
