//! `zkpipe-gpu-check`: G1 MSM on the GPU against arkworks on the CPU, bit for bit, for
//! random inputs of 2^10..2^22 points on both curves, with edge cases (zero scalars,
//! points at infinity, scalar r − 1), then timings of the resident-point MSM.
//!
//! Run on the GPU machine: `zkpipe-gpu-check [max_log=22] [timing_runs=7]`.

use ark_ec::scalar_mul::ScalarMul;
use ark_ec::{AffineRepr, CurveGroup, PrimeGroup, VariableBaseMSM};
use ark_ff::PrimeField;
use ark_std::UniformRand;
use std::time::Instant;
use zkpipe_cuda::{GpuCurve, ResidentG1};

fn check<E: GpuCurve>(name: &str, max_log: u32, runs: usize) -> bool {
    let mut ok = true;
    let max = 1usize << max_log;
    // Random points: random multiples of the generator by fixed-base tables (fast, parallel).
    eprintln!("[{name}] making {max} random points");
    let mut rng = ark_std::test_rng();
    let multiples: Vec<E::ScalarField> = (0..max).map(|_| E::ScalarField::rand(&mut rng)).collect();
    let points: Vec<E::G1Affine> = E::G1::generator().batch_mul(&multiples);
    for log in (10..=max_log).step_by(2) {
        let n = 1usize << log;
        let mut pts = points[..n].to_vec();
        let mut scalars: Vec<_> = (0..n)
            .map(|_| E::ScalarField::rand(&mut rng).into_bigint())
            .collect();
        // Edge cases: zero scalars, a point at infinity, r − 1.
        scalars[0] = Default::default();
        scalars[n / 2] = (-E::ScalarField::from(1u64)).into_bigint();
        pts[1] = E::G1Affine::zero();
        eprintln!("[{name}] 2^{log}: CPU MSM");
        let cpu = E::G1::msm_bigint(&pts, &scalars);
        eprintln!("[{name}] 2^{log}: one-shot GPU MSM");
        let oneshot = zkpipe_cuda::msm_oneshot::<E>(&pts, &scalars);
        let same1 = matches!(&oneshot, Ok(p) if p.into_affine() == cpu.into_affine());
        ok &= same1;
        println!(
            "{name} G1 MSM 2^{log} one-shot: {}",
            if same1 {
                "OK (matches CPU)"
            } else {
                "MISMATCH"
            }
        );
        if let Err(e) = &oneshot {
            println!("  error: {e}");
        }
        eprintln!("[{name}] 2^{log}: upload");
        let resident = ResidentG1::<E>::upload(&pts);
        eprintln!("[{name}] 2^{log}: GPU MSM");
        let gpu = resident.and_then(|r| r.msm(&scalars));
        let same = matches!(&gpu, Ok(p) if p.into_affine() == cpu.into_affine());
        ok &= same;
        println!(
            "{name} G1 MSM 2^{log}: {}",
            if same { "OK (matches CPU)" } else { "MISMATCH" }
        );
        if let Err(e) = &gpu {
            println!("  error: {e}");
        }
    }
    // Timings with points resident: median of `runs` after one warm-up.
    for log in [16u32, 20, 22].into_iter().filter(|&l| l <= max_log) {
        let n = 1usize << log;
        let scalars: Vec<_> = (0..n)
            .map(|_| E::ScalarField::rand(&mut rng).into_bigint())
            .collect();
        let t = Instant::now();
        let resident = match ResidentG1::<E>::upload(&points[..n]) {
            Ok(r) => r,
            Err(e) => {
                println!("{name} upload 2^{log}: {e}");
                return false;
            }
        };
        let upload = t.elapsed();
        let timed: Result<Vec<f64>, _> = (0..=runs)
            .map(|_| {
                let t = Instant::now();
                resident
                    .msm(&scalars)
                    .map(|_| t.elapsed().as_secs_f64() * 1e3)
            })
            .collect();
        let mut ms = match timed {
            Ok(ms) => ms[1..].to_vec(), // the first run is the warm-up
            Err(e) => {
                println!("{name} G1 MSM 2^{log}: {e}");
                return false;
            }
        };
        ms.sort_by(f64::total_cmp);
        let t = Instant::now();
        let _ = E::G1::msm_bigint(&points[..n], &scalars);
        let cpu = t.elapsed().as_secs_f64() * 1e3;
        println!(
            "{name} G1 MSM 2^{log} resident: min {:.2} ms, median {:.2} ms, max {:.2} ms ({runs} runs; upload {:.1} ms; CPU once {:.1} ms)",
            ms[0],
            ms[ms.len() / 2],
            ms[ms.len() - 1],
            upload.as_secs_f64() * 1e3,
            cpu
        );
    }
    ok
}

fn main() {
    let mut args = std::env::args().skip(1);
    let max_log: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(22);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    let a = check::<ark_bn254::Bn254>("BN254", max_log, runs);
    let b = check::<ark_bls12_381::Bls12_381>("BLS12-381", max_log, runs);
    if a && b {
        println!("ALL OK");
    } else {
        println!("FAILURES");
        std::process::exit(1);
    }
}
