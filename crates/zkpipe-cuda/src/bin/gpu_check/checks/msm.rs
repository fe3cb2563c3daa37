//! G1 and G2 MSMs against resident points (and sppark's one-shot G1 MSM) against the
//! CPU's MSM (`zkpipe_core::cpu`), bit for bit, with edge cases: zero scalars, a point at
//! infinity, r − 1, and a scalar ≥ r, which the GPU must refuse. Then their timings, with
//! the scalars in pinned memory.

use crate::common::{
    edge_scalars, once, random_scalars, refused, summarize, time_runs, verdict, Cfg,
};
use ark_ec::scalar_mul::ScalarMul;
use ark_ec::{AffineRepr, CurveGroup, PrimeGroup};
use ark_std::UniformRand;
use std::time::Instant;
use zkpipe_core::{cpu, Curve};
use zkpipe_cuda::{GpuCurve, PinnedBuf, ResidentG1, ResidentG2};

/// G1 MSMs: resident and one-shot against the CPU, a scalar ≥ r refused; then timings.
pub fn check_g1<E: Curve + GpuCurve>(name: &str, cfg: &Cfg) -> bool {
    let mut ok = true;
    let top = cfg.max_log.max(cfg.max_timed_log.min(24));
    let mut rng = ark_std::test_rng();
    eprintln!("[{name}] making 2^{top} random G1 points");
    let multiples: Vec<E::ScalarField> = (0..1usize << top)
        .map(|_| E::ScalarField::rand(&mut rng))
        .collect();
    let points: Vec<E::G1Affine> = E::G1::generator().batch_mul(&multiples);
    drop(multiples);
    for log in (10..=cfg.max_log).step_by(2) {
        let n = 1usize << log;
        let mut pts = points[..n].to_vec();
        pts[1] = E::G1Affine::zero();
        let mut scalars = random_scalars::<E>(n, &mut rng);
        let too_big = edge_scalars::<E>(&mut scalars);
        let want = cpu::msm_g1::<E>(&pts, &scalars).map(|p| p.into_affine());
        let oneshot = zkpipe_cuda::msm_oneshot::<E>(&pts, &scalars);
        let same1 = matches!((&oneshot, &want), (Ok(p), Ok(c)) if p.into_affine() == *c);
        ok &= same1;
        println!("{name} G1 MSM 2^{log} one-shot: {}", verdict(same1));
        let resident = ResidentG1::<E>::upload(&pts, 0);
        let gpu = resident
            .as_ref()
            .map_err(|e| e.to_string())
            .and_then(|r| r.msm(&scalars).map_err(|e| e.to_string()));
        let same = matches!((&gpu, &want), (Ok(p), Ok(c)) if p.into_affine() == *c);
        ok &= same;
        println!("{name} G1 MSM 2^{log} resident: {}", verdict(same));
        if let Ok(r) = &resident {
            let no = refused(r.msm(&too_big), n);
            ok &= no;
            println!(
                "{name} G1 MSM 2^{log} scalar r + 5: {}",
                if no { "refused (OK)" } else { "NOT REFUSED" }
            );
        }
        for e in [oneshot.err().map(|e| e.to_string()), gpu.err()]
            .into_iter()
            .flatten()
        {
            println!("  error: {e}");
        }
    }
    for log in [16u32, 20, 22, 24]
        .into_iter()
        .filter(|&l| l <= top.min(cfg.max_timed_log))
    {
        let n = 1usize << log;
        let scalars = random_scalars::<E>(n, &mut rng);
        let t = Instant::now();
        let resident = match ResidentG1::<E>::upload(&points[..n], 0) {
            Ok(r) => r,
            Err(e) => {
                println!("{name} G1 upload 2^{log}: {e}");
                return false;
            }
        };
        let upload = t.elapsed().as_secs_f64() * 1e3;
        let mut pinned = PinnedBuf::new(n * 32).expect("pinned buffer");
        let p = pinned.stage(0, &scalars) as *const [u64; 4];
        match time_runs(cfg.runs, || resident.msm_raw(p, n, false)) {
            Ok(mut ms) => println!(
                "{name} G1 MSM 2^{log} resident, pinned scalars: {} ({} runs; upload {upload:.1} ms)",
                summarize(&mut ms),
                cfg.runs
            ),
            Err(e) => {
                println!("{name} G1 MSM 2^{log}: {e}");
                ok = false;
            }
        }
        if log <= 20 {
            let (_, ms) = once(|| cpu::msm_g1::<E>(&points[..n], &scalars));
            println!(
                "{name} G1 MSM 2^{log} CPU (zkpipe's MSM, {} threads), once: {ms:.1} ms",
                rayon::current_num_threads(),
            );
        }
    }
    ok
}

/// G2 MSMs: resident against the CPU, a scalar ≥ r refused; then timings at 2^20.
pub fn check_g2<E: Curve + GpuCurve>(name: &str, cfg: &Cfg) -> bool {
    let mut ok = true;
    let max_check = cfg.max_log.min(18);
    let top = max_check.max(cfg.max_timed_log.min(20));
    let mut rng = ark_std::test_rng();
    eprintln!("[{name}] making 2^{top} random G2 points");
    let multiples: Vec<E::ScalarField> = (0..1usize << top)
        .map(|_| E::ScalarField::rand(&mut rng))
        .collect();
    let points: Vec<E::G2Affine> = E::G2::generator().batch_mul(&multiples);
    drop(multiples);
    for log in (10..=max_check).step_by(2) {
        let n = 1usize << log;
        let mut pts = points[..n].to_vec();
        pts[1] = E::G2Affine::zero();
        let mut scalars = random_scalars::<E>(n, &mut rng);
        let too_big = edge_scalars::<E>(&mut scalars);
        let want = cpu::msm_g2::<E>(&pts, &scalars).map(|p| p.into_affine());
        let resident = ResidentG2::<E>::upload(&pts, 0);
        let gpu = resident
            .as_ref()
            .map_err(|e| e.to_string())
            .and_then(|r| r.msm(&scalars).map_err(|e| e.to_string()));
        let same = matches!((&gpu, &want), (Ok(p), Ok(c)) if p.into_affine() == *c);
        ok &= same;
        println!("{name} G2 MSM 2^{log} resident: {}", verdict(same));
        if let Ok(r) = &resident {
            let no = refused(r.msm(&too_big), n);
            ok &= no;
            println!(
                "{name} G2 MSM 2^{log} scalar r + 5: {}",
                if no { "refused (OK)" } else { "NOT REFUSED" }
            );
        }
        if let Err(e) = &gpu {
            println!("  error: {e}");
        }
    }
    if top >= 20 {
        let n = 1usize << 20;
        let scalars = random_scalars::<E>(n, &mut rng);
        let resident = match ResidentG2::<E>::upload(&points[..n], 0) {
            Ok(r) => r,
            Err(e) => {
                println!("{name} G2 upload 2^20: {e}");
                return false;
            }
        };
        let mut pinned = PinnedBuf::new(n * 32).expect("pinned buffer");
        let p = pinned.stage(0, &scalars) as *const [u64; 4];
        match time_runs(cfg.runs, || resident.msm_raw(p, n, false)) {
            Ok(mut ms) => println!(
                "{name} G2 MSM 2^20 resident, pinned scalars: {} ({} runs)",
                summarize(&mut ms),
                cfg.runs
            ),
            Err(e) => {
                println!("{name} G2 MSM 2^20: {e}");
                ok = false;
            }
        }
        let (_, ms) = once(|| cpu::msm_g2::<E>(&points[..n], &scalars));
        println!(
            "{name} G2 MSM 2^20 CPU (zkpipe's MSM, {} threads), once: {ms:.1} ms",
            rayon::current_num_threads(),
        );
    }
    ok
}
