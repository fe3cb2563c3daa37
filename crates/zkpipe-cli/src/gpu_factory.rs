//! The daemon's devices on GPUs: `zkpipe serve --backend cuda` makes every visible GPU an
//! engine device (restrict them with `CUDA_VISIBLE_DEVICES`) and binds a key to a GPU
//! through a [`CudaBackend`], which keeps the key's points resident there.

use std::sync::Arc;
use zkpipe_core::quotient::QuotientDomain;
use zkpipe_core::reduce::QapEvals;
use zkpipe_core::stages::DeviceSums;
use zkpipe_core::{backend::ScalarInt, Backend, Bls12_381, Bn254, CompiledKey, Curve, Error};
use zkpipe_core::{PassInput, Timings};
use zkpipe_cuda::{
    device_bytes_for_shape, device_bytes_per_pass, CudaBackend, CudaError, GpuCurve,
};
use zkpipe_engine::{BackendFactory, DeviceInfo, KeyMeta};
use zkpipe_formats::CurveId;

/// Every visible GPU as one engine device, in CUDA's order.
pub struct CudaFactory {
    gpus: Vec<zkpipe_cuda::DeviceInfo>,
}

impl CudaFactory {
    /// The factory for this machine's GPUs, or why there are none.
    pub fn new() -> Result<Self, CudaError> {
        // GPU 0 first: its error says why there is none (a build without CUDA, no device).
        let mut gpus = vec![zkpipe_cuda::device_info(0)?];
        for i in 1..zkpipe_cuda::device_count() {
            gpus.push(zkpipe_cuda::device_info(i)?);
        }
        Ok(Self { gpus })
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
    fn device_pass(
        &self,
        key: &CompiledKey<E>,
        evals: &mut QapEvals<E::ScalarField>,
        w: &[ScalarInt<E>],
        h: &mut Vec<ScalarInt<E>>,
        g2: bool,
        t: &mut Timings,
    ) -> Result<DeviceSums<E>, Error> {
        self.backend.device_pass(key, evals, w, h, g2, t)
    }
    fn reduces_on_device(&self, key: &CompiledKey<E>) -> bool {
        self.backend.reduces_on_device(key)
    }
    fn batch_limit(&self, key: &CompiledKey<E>) -> usize {
        self.backend.batch_limit(key)
    }
    fn device_batch(
        &self,
        key: &CompiledKey<E>,
        inputs: &mut [PassInput<'_, E>],
        g2: bool,
    ) -> Vec<Result<DeviceSums<E>, Error>> {
        self.backend.device_batch(key, inputs, g2)
    }
}

fn bind<E: Curve + GpuCurve>(
    key: &Arc<CompiledKey<E>>,
    gpu: usize,
) -> Result<Arc<dyn Backend<E>>, Error> {
    let backend = CudaBackend::new(key, gpu).map_err(|e| Error::Backend {
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
        self.gpus
            .iter()
            .enumerate()
            .map(|(i, g)| DeviceInfo {
                name: format!("cuda:{i} ({})", g.name),
                memory_total: Some(g.total_bytes as u64),
            })
            .collect()
    }

    fn g2_on_device(&self) -> bool {
        true
    }

    fn reduces_on_device(&self) -> bool {
        zkpipe_cuda::reduces_on_gpu()
    }

    fn max_batch(&self) -> usize {
        zkpipe_cuda::BATCH_MAX_PROOFS
    }

    fn key_device_bytes(&self, key: &KeyMeta) -> u64 {
        let f = match key.curve {
            CurveId::Bn254 => device_bytes_for_shape::<Bn254>,
            CurveId::Bls12_381 => device_bytes_for_shape::<Bls12_381>,
        };
        f(
            key.n_vars,
            key.n_public,
            key.domain_size,
            key.n_coefficients,
        ) as u64
    }

    fn partition_device_bytes(&self, key: &KeyMeta) -> u64 {
        device_bytes_per_pass(key.n_vars, key.domain_size) as u64
    }

    fn passes_per_device(&self) -> usize {
        // A proof's MSMs already run at once; a second proof in flight overlaps one's
        // host work (staging, sppark's per-call synchronizes) with the other's kernels.
        2
    }

    fn bind_bn254(
        &self,
        key: &Arc<CompiledKey<Bn254>>,
        device: usize,
    ) -> Result<Arc<dyn Backend<Bn254>>, Error> {
        bind(key, device)
    }

    fn bind_bls12_381(
        &self,
        key: &Arc<CompiledKey<Bls12_381>>,
        device: usize,
    ) -> Result<Arc<dyn Backend<Bls12_381>>, Error> {
        bind(key, device)
    }
}
