//! The daemon's devices on a GPU: `zkpipe serve --backend cuda` binds each key to GPU 0
//! through a [`CudaBackend`], which keeps the key's points resident there.

use std::sync::Arc;
use zkpipe_core::quotient::QuotientDomain;
use zkpipe_core::reduce::QapEvals;
use zkpipe_core::{backend::ScalarInt, Backend, Bls12_381, Bn254, CompiledKey, Curve, Error};
use zkpipe_cuda::{device_bytes_for_shape, CudaBackend, CudaError, GpuCurve};
use zkpipe_engine::{BackendFactory, DeviceInfo, KeyMeta};
use zkpipe_formats::CurveId;

/// GPU 0 as the engine's one device (several GPUs are not placed yet).
pub struct CudaFactory {
    device: zkpipe_cuda::DeviceInfo,
}

impl CudaFactory {
    /// The factory for this machine's GPU 0, or why there is none.
    pub fn new() -> Result<Self, CudaError> {
        Ok(Self {
            device: zkpipe_cuda::device_info()?,
        })
    }
}

/// A key bound to the GPU: holds the key so its points stay where the backend found them.
struct Bound<E: Curve + GpuCurve> {
    _key: Arc<CompiledKey<E>>,
    backend: CudaBackend<E>,
}

impl<E: Curve + GpuCurve> Backend<E> for Bound<E> {
    fn name(&self) -> &'static str {
        self.backend.name()
    }
    fn quotient(
        &self,
        d: &QuotientDomain<E::ScalarField>,
        e: &mut QapEvals<E::ScalarField>,
    ) -> Result<(), Error> {
        self.backend.quotient(d, e)
    }
    fn msm_g1(&self, b: &[E::G1Affine], s: &[ScalarInt<E>]) -> Result<E::G1, Error> {
        self.backend.msm_g1(b, s)
    }
    fn msm_g2(&self, b: &[E::G2Affine], s: &[ScalarInt<E>]) -> Result<E::G2, Error> {
        self.backend.msm_g2(b, s)
    }
}

fn bind<E: Curve + GpuCurve>(key: &Arc<CompiledKey<E>>) -> Result<Arc<dyn Backend<E>>, Error> {
    let backend = CudaBackend::new(key).map_err(|e| Error::Backend {
        backend: "cuda",
        message: e.to_string(),
    })?;
    Ok(Arc::new(Bound {
        _key: Arc::clone(key),
        backend,
    }))
}

impl BackendFactory for CudaFactory {
    fn devices(&self) -> Vec<DeviceInfo> {
        vec![DeviceInfo {
            name: format!("cuda:0 ({})", self.device.name),
            memory_total: Some(self.device.total_bytes as u64),
        }]
    }

    fn g2_on_device(&self) -> bool {
        true
    }

    fn key_device_bytes(&self, key: &KeyMeta) -> u64 {
        let f = match key.curve {
            CurveId::Bn254 => device_bytes_for_shape::<Bn254>,
            CurveId::Bls12_381 => device_bytes_for_shape::<Bls12_381>,
        };
        f(key.n_vars, key.n_public, key.domain_size) as u64
    }

    fn bind_bn254(
        &self,
        key: &Arc<CompiledKey<Bn254>>,
        _device: usize,
    ) -> Result<Arc<dyn Backend<Bn254>>, Error> {
        bind(key)
    }

    fn bind_bls12_381(
        &self,
        key: &Arc<CompiledKey<Bls12_381>>,
        _device: usize,
    ) -> Result<Arc<dyn Backend<Bls12_381>>, Error> {
        bind(key)
    }
}
