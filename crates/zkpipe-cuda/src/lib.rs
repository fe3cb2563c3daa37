//! zkpipe's CUDA backend: the quotient NTTs and the G1 and G2 multi-scalar
//! multiplications of a Groth16 proof on an NVIDIA GPU through sppark, with the key's
//! points uploaded once and kept resident, and every transfer staged through pinned
//! host memory.
//!
//! Built with the cargo feature `cuda` (`scripts/build-cuda.sh` installs the CUDA 13.0
//! toolchain from PyPI and builds). Without it the crate still builds, and every entry
//! point returns [`CudaError::NotBuilt`], so CPU-only builds and CI need no nvcc.
//!
//! This is the only crate that knows CUDA exists; all `extern "C"` declarations are in
//! `enabled/ffi.rs`. [`CudaBackend`] is what the prover uses.
#![warn(missing_docs)]

mod backend;

pub use backend::{
    device_bytes_for_shape, device_bytes_needed, device_bytes_per_pass, reduces_on_gpu,
    CudaBackend, BATCH_MAX_DOMAIN, BATCH_MAX_PROOFS,
};

/// Why a GPU operation failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CudaError {
    /// The binary was built without the `cuda` feature.
    #[error("this zkpipe was built without CUDA support: build it with scripts/build-cuda.sh (cargo feature `cuda`)")]
    NotBuilt,
    /// No CUDA device is visible (no GPU, or no driver).
    #[error("no CUDA device found (is there an NVIDIA GPU and driver?)")]
    NoDevice,
    /// A GPU index beyond the devices this process sees.
    #[error("there is no GPU {index}: this machine has {count} visible CUDA device(s)")]
    NoSuchDevice {
        /// The index asked for.
        index: usize,
        /// Devices visible.
        count: usize,
    },
    /// The key or job does not fit in the device's free memory.
    #[error("not enough GPU memory: {what} needs {needed_mib} MiB, {free_mib} MiB free of {total_mib} MiB")]
    OutOfMemory {
        /// What was being placed on the device.
        what: String,
        /// Estimated need.
        needed_mib: usize,
        /// Free on the device.
        free_mib: usize,
        /// Device total.
        total_mib: usize,
    },
    /// The CUDA runtime or a kernel reported an error.
    #[error("CUDA error {code}: {message}")]
    Device {
        /// cudaError_t value.
        code: i32,
        /// Its description.
        message: String,
    },
    /// A scalar that is not below the group order r (the GPU kernels assume reduced
    /// scalars; zkpipe's own scalars always are).
    #[error("scalar {index} is not below the group order")]
    ScalarOutOfRange {
        /// Its position.
        index: usize,
    },
    /// Inputs whose sizes do not match.
    #[error("{0}")]
    Length(String),
}

/// A GPU's name and memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Free device memory in bytes.
    pub free_bytes: usize,
    /// Total device memory in bytes.
    pub total_bytes: usize,
}

#[cfg(feature = "cuda")]
#[path = "enabled/mod.rs"]
mod imp;
#[cfg(not(feature = "cuda"))]
#[path = "disabled.rs"]
mod imp;

pub use imp::{
    device_count, device_info, msm_oneshot, GpuCurve, GpuQuotient, PinnedBuf, ResidentG1,
    ResidentG2,
};
/// The lower-level GPU pieces the check binary drives directly (CUDA builds only).
#[cfg(feature = "cuda")]
pub use imp::{BatchPlan, DeviceBuf, GpuGroup, GpuMatrices, Resident, G1, G2};
