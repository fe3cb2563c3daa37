//! `--backend auto|cpu|cuda`: which devices run the quotient stage and the MSMs. The CLI
//! only chooses; the devices themselves are `zkpipe_core::CpuDevices` and
//! `zkpipe_cuda::CudaDevices`.

use anyhow::{bail, Context, Result};
use std::sync::Arc;
use zkpipe_core::device::{bind, BindCurve, BoundKey, Devices};
use zkpipe_core::{CompiledKey, CpuBound, CpuDevices};
use zkpipe_cuda::{CudaDevices, CudaError};

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

/// The daemon's devices for `choice`: every visible GPU, or the CPU.
pub fn devices(choice: BackendChoice) -> Result<Arc<dyn Devices>> {
    Ok(match choice {
        BackendChoice::Cpu => Arc::new(CpuDevices),
        BackendChoice::Cuda => Arc::new(CudaDevices::new().context("--backend cuda")?),
        BackendChoice::Auto => match CudaDevices::new() {
            Ok(d) => Arc::new(d),
            Err(_) => Arc::new(CpuDevices),
        },
    })
}

/// `key` bound to the device `choice` asks for (a GPU's binding uploads the key's points
/// and matrices to GPU `gpu` now).
pub fn select<E: BindCurve>(
    choice: BackendChoice,
    key: Arc<CompiledKey<E>>,
    gpu: usize,
) -> Result<Box<dyn BoundKey<E>>> {
    let on_gpu = |key| -> Result<Box<dyn BoundKey<E>>, zkpipe_core::Error> {
        let gpus = CudaDevices::new().map_err(|e| zkpipe_core::Error::Device {
            device: "cuda".into(),
            source: Box::new(e),
        })?;
        bind(&gpus, gpu, key)
    };
    // One proof: [B]₂ runs in the pass, beside the other MSMs (experiment 027).
    let on_cpu = |key| CpuBound::bind(key).with_g2_in_pass();
    match choice {
        BackendChoice::Cpu => Ok(Box::new(on_cpu(key))),
        BackendChoice::Cuda => on_gpu(key).context("--backend cuda"),
        BackendChoice::Auto => {
            if zkpipe_cuda::device_count() == 0 {
                return Ok(Box::new(on_cpu(key)));
            }
            match on_gpu(Arc::clone(&key)) {
                Ok(b) => Ok(b),
                // A key too big for the GPU still proves, on the CPU; say so once.
                Err(e) if out_of_memory(&e) => {
                    eprintln!("zkpipe: note: {e}; proving on the CPU");
                    Ok(Box::new(on_cpu(key)))
                }
                Err(e) => bail!("--backend auto: the GPU is present but failed: {e}"),
            }
        }
    }
}

/// Whether a binding failed for lack of GPU memory.
fn out_of_memory(e: &zkpipe_core::Error) -> bool {
    match e {
        zkpipe_core::Error::Device { source, .. } => source
            .downcast_ref::<CudaError>()
            .is_some_and(|c| matches!(c, CudaError::OutOfMemory { .. })),
        _ => false,
    }
}
