//! [`CudaError`], why a GPU operation failed, and its one conversion into the core's
//! error ([`CudaError::on_gpu`]), which keeps it typed as the source.

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
    /// A key too large for the device's budget, which cannot stream under it either
    /// (the plan's one-line refusal, naming the sizes).
    #[error("{0}")]
    CannotStream(#[from] zkpipe_core::StreamPlanError),
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

impl CudaError {
    /// This error as the core's, from GPU `gpu`: [`zkpipe_core::Error::Device`] named
    /// `cuda:{gpu}`, with this error as its source (downcast it to match on the kind,
    /// e.g. [`CudaError::OutOfMemory`]).
    pub fn on_gpu(self, gpu: usize) -> zkpipe_core::Error {
        zkpipe_core::Error::Device {
            device: format!("cuda:{gpu}"),
            source: Box::new(self),
        }
    }
}
