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
    /// The GPU when this binary has CUDA support and a device is present, else the CPU;
    /// but a one-shot `prove` of a small key runs on the CPU, which finishes it before
    /// the GPU has started (a domain up to 2^17 on 16 threads, less on fewer).
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

/// How many proofs a binding serves: a one-shot `prove` pays the GPU's start-up (the
/// driver, a context, the key's upload: ~0.35 s at 2^16 on an H100) for one proof,
/// `bench` pays it once for many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proofs {
    /// One proof, then the process exits.
    One,
    /// Many proofs with the key bound once.
    Many,
}

/// The largest domain a one-shot proof runs on the CPU under `--backend auto`, on 16 or
/// more threads. Measured on an H100 machine's 16-core host (experiment 029, whole
/// `prove` processes, default key checks): BN254 2^16 0.13 s on the CPU against 0.37–0.47
/// on the GPU, 2^18 a tie (0.45–0.48 both); BLS12-381 2^16 0.20 against 0.41–0.47, 2^18
/// 0.73–0.79 against 0.52–0.64. Both cross between 2^17 and 2^18.
const ONE_SHOT_CPU_MAX_DOMAIN: usize = 1 << 17;

/// Whether `--backend auto` proves a one-shot proof of a key of `domain` on the CPU with
/// `threads` CPU threads although a GPU is present. The CPU's time falls about as
/// 1/threads and the GPU's start-up does not, so fewer threads than the 16 measured
/// lower the limit in proportion; more threads do not raise it (not measured).
pub fn one_shot_on_cpu(domain: usize, threads: usize) -> bool {
    domain.saturating_mul(16) <= ONE_SHOT_CPU_MAX_DOMAIN.saturating_mul(threads.min(16))
}

/// `key` bound to the device `choice` asks for, for `proofs` proofs (a GPU's binding
/// uploads the key's points and matrices to GPU `gpu` now).
pub fn select<E: BindCurve>(
    choice: BackendChoice,
    key: Arc<CompiledKey<E>>,
    gpu: usize,
    proofs: Proofs,
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
            let small = proofs == Proofs::One
                && one_shot_on_cpu(key.domain_size(), rayon::current_num_threads());
            if small || zkpipe_cuda::device_count() == 0 {
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

#[cfg(test)]
mod tests {
    use super::one_shot_on_cpu;

    #[test]
    fn one_shot_limit_follows_the_measured_crossover_and_the_threads() {
        assert!(one_shot_on_cpu(1 << 17, 16));
        assert!(!one_shot_on_cpu(1 << 18, 16));
        // More threads than measured do not raise it; fewer lower it in proportion.
        assert!(!one_shot_on_cpu(1 << 18, 128));
        assert!(one_shot_on_cpu(1 << 14, 2));
        assert!(!one_shot_on_cpu(1 << 15, 2));
        assert!(!one_shot_on_cpu(1, 0));
    }
}
