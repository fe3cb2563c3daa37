//! zkpipe's CUDA backend: G1 multi-scalar multiplication on NVIDIA GPUs through sppark,
//! with the key's points uploaded once and kept resident.
//!
//! Built with the cargo feature `cuda` (`scripts/build-cuda.sh` installs the CUDA 13.0
//! toolchain from PyPI and builds). Without it the crate still builds, and every entry
//! point returns [`CudaError::NotBuilt`], so CPU-only builds and CI need no nvcc.
//!
//! This is the only crate that knows CUDA exists; all `extern "C"` declarations are in
//! `enabled/ffi.rs`.
#![warn(missing_docs)]

/// Why a GPU operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CudaError {
    /// The binary was built without the `cuda` feature.
    #[error("this zkpipe was built without CUDA support: build it with scripts/build-cuda.sh (cargo feature `cuda`)")]
    NotBuilt,
    /// The CUDA runtime or a kernel reported an error.
    #[error("CUDA error {code}: {message}")]
    Device {
        /// cudaError_t value.
        code: i32,
        /// Its description.
        message: String,
    },
    /// Inputs whose lengths do not match.
    #[error("{0}")]
    Length(String),
}

#[cfg(feature = "cuda")]
#[path = "enabled/mod.rs"]
mod imp;
#[cfg(not(feature = "cuda"))]
#[path = "disabled.rs"]
mod imp;

pub use imp::{msm_oneshot, GpuCurve, ResidentG1};
