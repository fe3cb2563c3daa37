//! zkpipe's CUDA backend: the reduce, the quotient NTTs and the G1 and G2 multi-scalar
//! multiplications of a Groth16 proof on NVIDIA GPUs through sppark, with the key's
//! points and matrices uploaded once and kept resident, and every transfer staged through
//! pinned host memory.
//!
//! ```text
//!  CudaDevices::new(CudaOptions)           every visible GPU, in CUDA order
//!     │ zkpipe_core::device::bind(&devices, gpu, Arc<CompiledKey>, &BindOptions)
//!     ▼
//!  CudaBound<E>: zkpipe_core::BoundKey<E>  the key resident on one GPU; its pass runs a
//!                                          proof (or a batch of them) there
//! ```
//!
//! Built with the cargo feature `cuda` (`scripts/build-cuda.sh` installs the CUDA 13.0
//! toolchain from PyPI and builds). Without it the crate still builds with the same seam
//! API: [`CudaDevices::new`] and [`CudaBound::new`] return [`CudaError::NotBuilt`], so
//! CPU-only builds and CI need no nvcc. The kernel-level pieces that `zkpipe-gpu-check`
//! drives directly ([`ResidentG1`], [`GpuQuotient`], [`PinnedBuf`], …) exist only with
//! the feature.
//!
//! This is the only crate that knows CUDA exists; all `extern "C"` declarations are in
//! `enabled/ffi.rs`, behind the safe wrappers of `enabled/`.
#![warn(missing_docs)]

mod devices;
mod error;
mod options;
mod shape;

#[cfg(not(feature = "cuda"))]
mod disabled;
#[cfg(feature = "cuda")]
mod enabled;

pub use devices::CudaDevices;
pub use error::CudaError;
pub use options::{
    ConstantMode, CudaOptions, HostWait, LabSwitches, QuotientLaunch, BLOCK_CORES_PER_GPU,
    DEFAULT_STREAM_BATCH,
};
/// The kinds of pinned host memory ([`CudaOptions::upload_staging`]), zkpipe-core's.
pub use zkpipe_core::PinnedKind;

#[cfg(not(feature = "cuda"))]
pub use disabled::{device_count, device_info, set_host_wait, CudaBound, GpuCurve, GpuFixedBase};
#[cfg(feature = "cuda")]
pub use enabled::{device_count, device_info, set_host_wait, CudaBound, GpuCurve, GpuFixedBase};

/// The kernel-level GPU pieces the check binary drives directly (CUDA builds only).
#[cfg(feature = "cuda")]
pub use enabled::{
    msm_oneshot, BatchPlan, DeviceBuf, GpuGroup, GpuMatrices, GpuQuotient, PinnedBuf, Resident,
    ResidentG1, ResidentG2, G1, G2,
};

/// A GPU's name and memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInfo {
    /// e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Free device memory in bytes (when asked).
    pub free_bytes: usize,
    /// Total device memory in bytes.
    pub total_bytes: usize,
}

impl GpuInfo {
    /// The device budget on this GPU as found: `limit`, else its total memory, but never
    /// more than it had free. What it held before zkpipe placed anything there (its CUDA
    /// context, 527 MiB for an idle daemon on an H200, and other processes' memory) is not
    /// zkpipe's to plan with: a streamed key's plan sized to the total can need more than
    /// is free when the key binds, which then refuses it (lab 043n).
    pub fn budget(&self, limit: Option<u64>) -> u64 {
        limit
            .unwrap_or(self.total_bytes as u64)
            .min(self.free_bytes as u64)
    }
}
