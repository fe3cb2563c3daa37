//! `zkpipe-gpu-check`: the GPU paths against the CPU, bit for bit, on random inputs, then
//! their timings. For both curves:
//! - the quotient stage (3 iNTT + 3 coset NTT + a·b − c), 2^10..2^max_log;
//! - the reduce on the GPU (a = A·w, b = B·w, c = a∘b from resident matrices of circom-like
//!   rows) followed by the quotient, 2^10..2^max_log, against the CPU's reduce and
//!   quotient;
//! - G1 MSM (resident points and sppark's one-shot entry), 2^10..2^max_log;
//! - G2 MSM (resident points), 2^10..2^min(max_log, 18);
//!
//! with edge cases in every MSM: zero scalars, a point at infinity, r − 1; and a scalar
//! ≥ r (r + 5), which the GPU API must refuse ([`checks::msm`], [`checks::quotient`]);
//!
//! - the batched MSM (k scalar vectors in one pass), G1 and G2, at 2^10 and 2^14 with
//!   k = 1, 3, 8, then its time per proof against sppark's one-vector MSM
//!   ([`checks::batch`]);
//! - the seam: dev keys of 2^12 and 2^16 bound through `CudaDevices` against the same
//!   keys on the CPU (`CpuBound`): every verb, passes of one and of several proofs,
//!   wrong lengths refused, whole proofs self-checked; and the w MSMs' bit path, a 2^16
//!   key with a SHA-256 circuit's values streamed (and in a `lab` build in-core on
//!   sppark's lone path) ([`checks::seam`]);
//! - constant-work MSMs: every witness distribution through a resident key's pass with
//!   constant work off and on, against the CPU, timed, and the spread of those times
//!   ([`checks::constant`]);
//! - `setup --dev --backend cuda`: dev keys of 2^10, 2^13 and 2^16 whose points the GPU
//!   made, byte for byte against the CPU's ([`checks::setup`]).
//!
//! Timings (median of `runs` after one warm-up, points resident, scalars from pinned
//! memory): G1 MSM at 2^16/20/22/24, G2 at 2^20, quotient at 2^20/22/24, the GPU reduce
//! at 2^20/22 (against the CPU's, once), capped at 2^max_timed_log.
//!
//! Run on the GPU machine: `zkpipe-gpu-check [max_log=22] [runs=7] [max_timed_log=24]
//! [kernels|batch|seam|constant|pinned|setup]` (one part only: the first four checks,
//! the batched MSM, the seam, constant work, pinned staging: portable vs write-combined,
//! each direction timed, or the GPU's dev setup).
//!
//! `ZKPIPE_CUDA_PASS_TRACE=1` traces every batched pass; in a `lab` build
//! `ZKPIPE_CUDA_CONSTANT=mask|full|both` picks how constant work is kept constant and
//! `ZKPIPE_CUDA_RUN_GAP=G` the widest digit step a run takes (0: any).

mod checks;
mod common;

use ark_bls12_381::Bls12_381;
use ark_bn254::Bn254;
use checks::{batch, constant, msm, pinned, quotient, seam, setup};
use common::Cfg;
use zkpipe_core::Devices;
use zkpipe_cuda::{CudaDevices, CudaOptions};

/// The device set's options from this process's environment (read once, here).
fn options() -> CudaOptions {
    let on = |var: &str| std::env::var(var).is_ok_and(|v| v == "1");
    // A lab build has more fields (set below), and needs `mut`.
    #[allow(unused_mut, clippy::needless_update)]
    let mut opts = CudaOptions {
        pass_trace: on("ZKPIPE_CUDA_PASS_TRACE"),
        ..CudaOptions::default()
    };
    #[cfg(feature = "lab")]
    if let Ok(mode) = std::env::var("ZKPIPE_CUDA_CONSTANT") {
        match mode.parse() {
            Ok(m) => opts.lab.constant = m,
            Err(e) => {
                println!("ZKPIPE_CUDA_CONSTANT={e}");
                std::process::exit(2);
            }
        }
    }
    #[cfg(feature = "lab")]
    if let Ok(gap) = std::env::var("ZKPIPE_CUDA_RUN_GAP") {
        match gap.parse() {
            Ok(g) => {
                println!("runs stop at digit steps over {g} (0: never)");
                opts.lab.run_gap = Some(g);
            }
            Err(_) => {
                println!("ZKPIPE_CUDA_RUN_GAP={gap:?}: expected a number");
                std::process::exit(2);
            }
        }
    }
    opts
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut next = |d: u32| args.next().and_then(|a| a.parse().ok()).unwrap_or(d);
    let cfg = Cfg {
        max_log: next(22),
        runs: next(7) as usize,
        max_timed_log: next(24),
    };
    let only = std::env::args().nth(4);
    let run = |part: &str| only.is_none() || only.as_deref() == Some(part);
    let devices = match CudaDevices::new(options()) {
        Ok(d) => d,
        Err(e) => {
            println!("no device: {e}");
            std::process::exit(1);
        }
    };
    for (info, gpu) in devices.list().iter().zip(devices.gpus()) {
        println!(
            "device: {} ({} MiB free of {} MiB)",
            info.name,
            gpu.free_bytes >> 20,
            gpu.total_bytes >> 20
        );
    }
    let mut ok = true;
    if run("kernels") {
        ok &= quotient::check_quotient::<Bn254>("BN254", &cfg);
        ok &= quotient::check_quotient::<Bls12_381>("BLS12-381", &cfg);
        ok &= quotient::check_reduce::<Bn254>("BN254", &cfg);
        ok &= quotient::check_reduce::<Bls12_381>("BLS12-381", &cfg);
        ok &= msm::check_g1::<Bn254>("BN254", &cfg);
        ok &= msm::check_g1::<Bls12_381>("BLS12-381", &cfg);
        ok &= msm::check_g2::<Bn254>("BN254", &cfg);
        ok &= msm::check_g2::<Bls12_381>("BLS12-381", &cfg);
    }
    if run("batch") {
        ok &= batch::check_batches::<Bn254>("BN254", &cfg);
        ok &= batch::check_batches::<Bls12_381>("BLS12-381", &cfg);
    }
    if run("constant") {
        ok &= constant::check_constant_work::<Bn254>("BN254", &devices, &cfg);
        ok &= constant::check_constant_work::<Bls12_381>("BLS12-381", &devices, &cfg);
    }
    if run("pinned") {
        ok &= pinned::check_pinned(&cfg);
    }
    if run("seam") {
        ok &= seam::check_seam::<Bn254>("BN254", &devices, &cfg);
        ok &= seam::check_seam::<Bls12_381>("BLS12-381", &devices, &cfg);
    }
    if run("setup") {
        ok &= setup::check_setup::<Bn254>("BN254", cfg.max_log);
        ok &= setup::check_setup::<Bls12_381>("BLS12-381", cfg.max_log);
    }
    println!("{}", if ok { "ALL OK" } else { "FAILURES" });
    if !ok {
        std::process::exit(1);
    }
}
