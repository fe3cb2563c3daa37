//! `--backend auto|cpu|cuda`: where the quotient stage and the MSMs of a proof run.

use anyhow::{bail, Context, Result};
use zkpipe_core::{Backend, CompiledKey, CpuBackend, Curve};
use zkpipe_cuda::{CudaBackend, CudaError, GpuCurve};

/// Where the heavy stages run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// The GPU when this binary has CUDA support and a device is present, else the CPU.
    Auto,
    /// arkworks on the CPU.
    Cpu,
    /// sppark on the chosen GPU (an error if there is none or the key does not fit).
    Cuda,
}

/// The backend `choice` asks for, bound to `key` (a GPU backend uploads its points to GPU
/// `gpu` now).
pub fn select<'k, E: Curve + GpuCurve>(
    choice: BackendChoice,
    key: &'k CompiledKey<E>,
    gpu: usize,
) -> Result<Box<dyn Backend<E> + 'k>> {
    match choice {
        BackendChoice::Cpu => Ok(Box::new(CpuBackend)),
        BackendChoice::Cuda => Ok(Box::new(
            CudaBackend::new(key, gpu).context("--backend cuda")?,
        )),
        BackendChoice::Auto => {
            if zkpipe_cuda::device_count() == 0 {
                return Ok(Box::new(CpuBackend));
            }
            match CudaBackend::new(key, gpu) {
                Ok(b) => Ok(Box::new(b)),
                // A key too big for the GPU still proves, on the CPU; say so once.
                Err(e @ CudaError::OutOfMemory { .. }) => {
                    eprintln!("zkpipe: note: {e}; proving on the CPU");
                    Ok(Box::new(CpuBackend))
                }
                Err(e) => bail!("--backend auto: the GPU is present but failed: {e}"),
            }
        }
    }
}
