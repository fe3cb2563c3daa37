//! [`CudaDevices`]: every visible GPU as a device of zkpipe-core's seam, what a key needs
//! and may do there ([`crate::shape`]), and binding a key to one ([`crate::CudaBound`]).
//! Restrict the GPUs with `CUDA_VISIBLE_DEVICES`.

use crate::shape::{
    batch_max_proofs, binds_tables, caps, device_bytes_for_shape, device_bytes_per_pass,
    gpu_key_sets, residency, Tuning,
};
use crate::{
    device_count, device_info, set_host_wait, CudaBound, CudaError, CudaOptions, GpuCurve, GpuInfo,
    HostWait,
};
use std::sync::Arc;
use zkpipe_core::msm::stream_plan::KeySets;
use zkpipe_core::{
    BindOptions, Bls12_381, Bn254, BoundKey, Caps, CompiledKey, Curve, DeviceInfo, Devices, Error,
    KeyShape, Residency, StreamPlanError,
};

/// The device budget on `gpus` (each as found when it was opened): the smallest of their
/// [`GpuInfo::budget`]s under `limit`, as one plan serves them all.
fn budget_of(limit: Option<u64>, gpus: &[GpuInfo]) -> u64 {
    gpus.iter().map(|g| g.budget(limit)).min().unwrap_or(0)
}

/// Every GPU this process sees, in CUDA's order: device `i` of the seam is GPU `i`.
#[derive(Debug, Clone)]
pub struct CudaDevices {
    gpus: Vec<GpuInfo>,
    opts: CudaOptions,
    /// How host threads wait for these GPUs, `opts.host_wait` resolved for this host.
    host_wait: HostWait,
}

impl CudaDevices {
    /// This machine's GPUs, computing as `opts` says, or why there are none
    /// ([`CudaError::NotBuilt`] in a build without the `cuda` feature,
    /// [`CudaError::NoDevice`] without a GPU or driver).
    pub fn new(opts: CudaOptions) -> Result<Self, CudaError> {
        // GPU 0 first: its error says why there is none (a build without CUDA, no device).
        let mut gpus = vec![device_info(0)?];
        for i in 1..device_count() {
            gpus.push(device_info(i)?);
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let host_wait = opts.host_wait.for_host(gpus.len(), cores);
        if host_wait != HostWait::Auto {
            for i in 0..gpus.len() {
                set_host_wait(i, host_wait)?;
            }
        }
        Ok(Self {
            gpus,
            opts,
            host_wait,
        })
    }

    /// How host threads wait for these GPUs: the options' choice, with `Auto` resolved
    /// for this host (`Block` at ≤16 cores a GPU; `Auto` left to CUDA otherwise).
    pub fn host_wait(&self) -> HostWait {
        self.host_wait
    }

    /// The GPUs, as found by [`Self::new`] (free memory as of then).
    pub fn gpus(&self) -> &[GpuInfo] {
        &self.gpus
    }

    /// The options it was made with.
    pub fn options(&self) -> &CudaOptions {
        &self.opts
    }

    /// The device budget keys are placed under: the smallest [`GpuInfo::budget`] of its
    /// GPUs as they were when it opened them, under its options' limit.
    pub fn budget(&self) -> u64 {
        budget_of(self.opts.memory_limit, &self.gpus)
    }

    /// What streaming a key of `shape` here is sized from: its point sets as a GPU holds
    /// them, what each proof keeps on the device, and the MSMs' scratch.
    pub fn key_sets(&self, shape: &KeyShape) -> KeySets {
        gpu_key_sets(&self.options().lab(), shape)
    }

    /// Which path a resident key of `shape` bound with `opts` takes under [`Self::budget`]:
    /// in-core, or streamed with its plan; or why it cannot stream. A key bound on a GPU
    /// larger than the smallest may stay in-core where this says streamed (never the
    /// other way round), which its passes handle.
    pub fn residency(
        &self,
        shape: &KeyShape,
        opts: &BindOptions,
    ) -> Result<Residency, StreamPlanError> {
        let t = Tuning::new(&self.opts, opts);
        let tables = binds_tables(&t, true, shape.domain_size);
        residency(&t, shape, tables, self.budget(), self.opts.stream_batch())
    }

    fn bind<E: Curve + GpuCurve>(
        &self,
        gpu: usize,
        key: Arc<CompiledKey<E>>,
        opts: &BindOptions,
    ) -> Result<Box<dyn BoundKey<E>>, Error> {
        match CudaBound::with_budget(key, gpu, &self.opts, opts, self.budget()) {
            Ok(bound) => Ok(Box::new(bound)),
            Err(e) => Err(e.on_gpu(gpu)),
        }
    }
}

impl Devices for CudaDevices {
    fn list(&self) -> Vec<DeviceInfo> {
        self.gpus
            .iter()
            .enumerate()
            .map(|(i, g)| DeviceInfo {
                name: format!("cuda:{i} ({})", g.name),
                memory_total: Some(g.budget(None)),
            })
            .collect()
    }

    /// A key that cannot stream under the budget gets the in-core caps: its binding
    /// is refused anyway.
    fn caps(&self, shape: &KeyShape, opts: &BindOptions) -> Caps {
        let r = self.residency(shape, opts).unwrap_or(Residency::InCore);
        caps(&self.opts.lab(), shape, &r)
    }

    fn max_batch(&self) -> usize {
        batch_max_proofs(&self.opts.lab())
    }

    fn passes_per_device(&self) -> usize {
        // A proof's MSMs already run at once; a second proof in flight overlaps one's
        // host work (staging, sppark's per-call synchronizes) with the other's kernels.
        2
    }

    /// The daemon's keys, which this estimate is for, are resident (its key loading
    /// calls `CompiledKey::prepare_resident`), so their window tables count.
    /// A streamed key's need is its plan's: the batch's buffers, two chunks and their
    /// scratch.
    fn key_device_bytes(&self, shape: &KeyShape, opts: &BindOptions) -> u64 {
        if let Ok(Residency::Streamed(plan)) = self.residency(shape, opts) {
            return plan.device_bytes();
        }
        let t = Tuning::new(&self.opts, opts);
        device_bytes_for_shape(&t, shape, binds_tables(&t, true, shape.domain_size))
    }

    /// Nothing more for a streamed key: its plan counts its batch, and its passes run
    /// one at a time.
    fn partition_device_bytes(&self, shape: &KeyShape, opts: &BindOptions) -> u64 {
        if let Ok(Residency::Streamed(_)) = self.residency(shape, opts) {
            return 0;
        }
        device_bytes_per_pass(&Tuning::new(&self.opts, opts), shape)
    }

    /// The pinned staging buffer of a proof in flight, 32 bytes a value: w alone where the
    /// GPU reduces ([`Caps::reduces`], the default), else a, b, c (or w, if longer). A
    /// bound key keeps one such buffer per proof it has had in flight at once, so counting
    /// it per partition in the device stage is what admission needs.
    fn partition_host_bytes(&self, shape: &KeyShape, opts: &BindOptions) -> u64 {
        let values = if self.caps(shape, opts).reduces {
            shape.n_vars
        } else {
            (3 * shape.domain_size).max(shape.n_vars)
        };
        (values * 32) as u64
    }

    /// Uploads the key's points and matrices to GPU `device`, after checking that they
    /// fit in its free memory.
    fn bind_bn254(
        &self,
        device: usize,
        key: Arc<CompiledKey<Bn254>>,
        opts: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Bn254>>, Error> {
        self.bind(device, key, opts)
    }

    /// As [`Self::bind_bn254`].
    fn bind_bls12_381(
        &self,
        device: usize,
        key: Arc<CompiledKey<Bls12_381>>,
        opts: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Bls12_381>>, Error> {
        self.bind(device, key, opts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(total_mib: usize, free_mib: usize) -> GpuInfo {
        GpuInfo {
            name: "test".into(),
            free_bytes: free_mib << 20,
            total_bytes: total_mib << 20,
        }
    }

    #[test]
    fn the_budget_is_what_was_free_never_more_than_the_limit_the_smallest_gpus() {
        const MIB: u64 = 1 << 20;
        // An H200 with its context: without a limit, what was free, not the total.
        let h200 = gpu(143_771, 143_244);
        assert_eq!(h200.budget(None), 143_244 * MIB);
        // A limit below what is free is the budget (how a smaller card is emulated).
        assert_eq!(h200.budget(Some(16_384 * MIB)), 16_384 * MIB);
        // A 16 GB card with a 16 GiB limit: what its context left.
        let card = gpu(16_303, 15_900);
        assert_eq!(card.budget(Some(16_384 * MIB)), 15_900 * MIB);
        // Several GPUs: the smallest budget, as one plan serves them all.
        assert_eq!(budget_of(None, &[h200, card]), 15_900 * MIB);
        assert_eq!(budget_of(None, &[]), 0);
    }
}
