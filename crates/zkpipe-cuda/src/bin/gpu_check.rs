//! `zkpipe-gpu-check`: the GPU paths against the CPU, bit for bit, on random inputs, then
//! their timings. For both curves:
//! - G1 MSM (resident points and sppark's one-shot entry), 2^10..2^max_log;
//! - G2 MSM (resident points), 2^10..2^min(max_log, 18);
//! - the quotient stage (3 iNTT + 3 coset NTT + a·b − c), 2^10..2^max_log;
//! - the reduce on the GPU (a = A·w, b = B·w, c = a∘b from resident matrices of circom-like
//!   rows: runs of 1-term, 2–8-term, 16–64-term and rare 128–512-term rows, with 0, 1 and
//!   r − 1 among the values and w) followed by the quotient, 2^10..2^max_log, against
//!   the CPU's reduce and quotient;
//!
//! with edge cases in every MSM: zero scalars, a point at infinity, r − 1; and a scalar
//! ≥ r (r + 5), which the GPU API must refuse.
//!
//! - the batched MSM (k scalar vectors in one pass), G1 and G2, at 2^10 and 2^14 with
//!   k = 1, 3, 8: witness-like vectors (mostly 0 and 1, so one bucket holds thousands of
//!   entries), random ones, Montgomery-form input, and a set padded with points at
//!   infinity (as [C]₁ is); then its time per proof against sppark's one-vector MSM.
//!
//! Timings (median of `runs` after one warm-up, points resident, scalars from pinned
//! memory): G1 MSM at 2^16/20/22/24, G2 at 2^20, quotient at 2^20/22/24, the GPU reduce
//! at 2^20/22 (against the CPU's, once), capped at 2^max_timed_log.
//!
//! Run on the GPU machine: `zkpipe-gpu-check [max_log=22] [runs=7] [max_timed_log=24]
//! [batch]` (`batch`: only the batched MSM's checks and timings).

use ark_ec::scalar_mul::ScalarMul;
use ark_ec::AdditiveGroup;
use ark_ec::{AffineRepr, CurveGroup, PrimeGroup, VariableBaseMSM};
use ark_ff::{BigInteger, Field, PrimeField};
use ark_std::UniformRand;
use std::time::Instant;
use zkpipe_core::key::Csr;
use zkpipe_core::quotient::{quotient, QuotientDomain};
use zkpipe_core::reduce::{reduce, QapEvals, DEFAULT_SCHEDULE};
use zkpipe_core::Curve;
use zkpipe_cuda::{
    BatchPlan, DeviceBuf, GpuCurve, GpuGroup, GpuMatrices, GpuQuotient, PinnedBuf, Resident,
    ResidentG1, ResidentG2, G1, G2,
};

type Int<E> = <<E as ark_ec::pairing::Pairing>::ScalarField as PrimeField>::BigInt;

fn random_scalars<E: Curve>(n: usize, rng: &mut impl rand::Rng) -> Vec<Int<E>> {
    (0..n)
        .map(|_| E::ScalarField::rand(rng).into_bigint())
        .collect()
}

/// Zero scalars and r − 1; returns a copy with r + 5 (a scalar ≥ r) at n/3.
fn edge_scalars<E: Curve>(s: &mut [Int<E>]) -> Vec<Int<E>> {
    let n = s.len();
    s[0] = Default::default();
    s[n / 2] = (-E::ScalarField::from(1u64)).into_bigint();
    let mut too_big = s.to_vec();
    let mut big = E::ScalarField::MODULUS;
    big.add_with_carry(&Int::<E>::from(5u64));
    too_big[n / 3] = big;
    too_big
}

/// The GPU must refuse a scalar ≥ r rather than return a wrong sum.
fn refused<T>(r: Result<T, zkpipe_cuda::CudaError>, n: usize) -> bool {
    matches!(r, Err(zkpipe_cuda::CudaError::ScalarOutOfRange { index }) if index == n / 3)
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "OK (matches CPU)"
    } else {
        "MISMATCH"
    }
}

fn summarize(ms: &mut [f64]) -> String {
    ms.sort_by(f64::total_cmp);
    format!(
        "min {:.2} ms, median {:.2} ms, max {:.2} ms",
        ms[0],
        ms[ms.len() / 2],
        ms[ms.len() - 1]
    )
}

/// Runs `f` warm-up + `runs` times, returns the measured milliseconds.
fn time_runs<T, E2>(runs: usize, mut f: impl FnMut() -> Result<T, E2>) -> Result<Vec<f64>, E2> {
    let mut ms = Vec::new();
    for i in 0..=runs {
        let t = Instant::now();
        f()?;
        if i > 0 {
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok(ms)
}

struct Cfg {
    max_log: u32,
    runs: usize,
    max_timed_log: u32,
}

fn check_g1<E: Curve + GpuCurve>(name: &str, cfg: &Cfg) -> bool {
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
        let cpu = E::G1::msm_bigint(&pts, &scalars).into_affine();
        let oneshot = zkpipe_cuda::msm_oneshot::<E>(&pts, &scalars);
        let same1 = matches!(&oneshot, Ok(p) if p.into_affine() == cpu);
        ok &= same1;
        println!("{name} G1 MSM 2^{log} one-shot: {}", verdict(same1));
        let resident = ResidentG1::<E>::upload(&pts, 0);
        let gpu = resident
            .as_ref()
            .map_err(|e| e.to_string())
            .and_then(|r| r.msm(&scalars).map_err(|e| e.to_string()));
        let same = matches!(&gpu, Ok(p) if p.into_affine() == cpu);
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
            let t = Instant::now();
            let _ = E::G1::msm_bigint(&points[..n], &scalars);
            println!(
                "{name} G1 MSM 2^{log} arkworks CPU ({} threads), once: {:.1} ms",
                rayon::current_num_threads(),
                t.elapsed().as_secs_f64() * 1e3
            );
        }
    }
    ok
}

fn check_g2<E: Curve + GpuCurve>(name: &str, cfg: &Cfg) -> bool {
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
        let cpu = E::G2::msm_bigint(&pts, &scalars).into_affine();
        let resident = ResidentG2::<E>::upload(&pts, 0);
        let gpu = resident
            .as_ref()
            .map_err(|e| e.to_string())
            .and_then(|r| r.msm(&scalars).map_err(|e| e.to_string()));
        let same = matches!(&gpu, Ok(p) if p.into_affine() == cpu);
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
        let t = Instant::now();
        let _ = E::G2::msm_bigint(&points[..n], &scalars);
        println!(
            "{name} G2 MSM 2^20 arkworks CPU ({} threads), once: {:.1} ms",
            rayon::current_num_threads(),
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    ok
}

fn check_quotient<E: Curve + GpuCurve>(name: &str, cfg: &Cfg) -> bool {
    let mut ok = true;
    let mut rng = ark_std::test_rng();
    let top = cfg.max_log.max(cfg.max_timed_log.min(24));
    for log in (10..=top).step_by(2) {
        let n = 1usize << log;
        let d = QuotientDomain::<E::ScalarField>::new(n).expect("domain");
        let rand_vec = |rng: &mut _| {
            (0..n)
                .map(|_| E::ScalarField::rand(rng))
                .collect::<Vec<_>>()
        };
        let evals = QapEvals {
            a: rand_vec(&mut rng),
            b: rand_vec(&mut rng),
            c: rand_vec(&mut rng),
        };
        let q = match GpuQuotient::<E>::new(log, d.domain.group_gen, d.coset.offset, 0) {
            Ok(q) => q,
            Err(e) => {
                println!("{name} quotient 2^{log}: {e}");
                return false;
            }
        };
        let bytes = n * std::mem::size_of::<E::ScalarField>();
        let mut pinned = PinnedBuf::new(3 * bytes).expect("pinned buffer");
        let pa = pinned.stage(0, &evals.a);
        let pb = pinned.stage(bytes, &evals.b);
        let pc = pinned.stage(2 * bytes, &evals.c);
        let ph = pinned.ptr_at(0) as *mut E::ScalarField;
        if log <= cfg.max_log {
            let mut cpu = QapEvals {
                a: evals.a.clone(),
                b: evals.b.clone(),
                c: evals.c.clone(),
            };
            quotient(&d, &mut cpu);
            // SAFETY: four pointers to n elements each inside `pinned`.
            let r = unsafe { q.run_raw(pa, pb, pc, ph) };
            let mut h = vec![E::ScalarField::from(0u64); n];
            pinned.unstage(0, &mut h);
            let same = r.is_ok() && h == cpu.a;
            ok &= same;
            println!("{name} quotient 2^{log}: {}", verdict(same));
            if !same && r.is_ok() {
                // Diagnose: wrong order (a permutation) or wrong values?
                let equal = h.iter().zip(&cpu.a).filter(|(x, y)| x == y).count();
                let key = |v: &E::ScalarField| v.into_bigint();
                let mut hs: Vec<_> = h.iter().map(key).collect();
                let mut cs: Vec<_> = cpu.a.iter().map(key).collect();
                hs.sort();
                cs.sort();
                println!(
                    "  {equal} of {n} positions equal; same values in another order: {}",
                    hs == cs
                );
            }
            if let Err(e) = r {
                println!("  error: {e}");
            }
            // Restore a (h overwrote it) for the timings below.
            pinned.stage(0, &evals.a);
        }
        if [20u32, 22, 24].contains(&log) && log <= cfg.max_timed_log {
            // SAFETY: as above; a is overwritten by h after each run, which only changes
            // the values computed, not the work done.
            match time_runs(cfg.runs, || unsafe { q.run_raw(pa, pb, pc, ph) }) {
                Ok(mut ms) => println!(
                    "{name} quotient 2^{log} (3 iNTT + 3 coset NTT + pointwise, with transfers): {} ({} runs)",
                    summarize(&mut ms),
                    cfg.runs
                ),
                Err(e) => {
                    println!("{name} quotient 2^{log}: {e}");
                    ok = false;
                }
            }
            let mut cpu = QapEvals {
                a: evals.a.clone(),
                b: evals.b.clone(),
                c: evals.c.clone(),
            };
            let t = Instant::now();
            quotient(&d, &mut cpu);
            println!(
                "{name} quotient 2^{log} arkworks CPU ({} threads), once: {:.1} ms",
                rayon::current_num_threads(),
                t.elapsed().as_secs_f64() * 1e3
            );
        }
    }
    ok
}

/// A matrix of `rows` rows over `cols` columns shaped like circom's (runs of rows of one
/// kind), with values 0, 1 and r − 1 among random ones.
fn circom_like_matrix<F: PrimeField>(rows: usize, cols: usize, rng: &mut impl rand::Rng) -> Csr<F> {
    let mut m = Csr {
        row_starts: vec![0u32],
        cols: Vec::new(),
        vals: Vec::new(),
    };
    let (mut len, mut run) = (1..=1usize, 0usize);
    for _ in 0..rows {
        if run == 0 {
            len = match rng.gen_range(0..100) {
                0..=59 => 1..=1,
                60..=92 => 2..=8,
                93..=98 => 16..=64,
                _ => 128..=512,
            };
            run = rng.gen_range(1..=256);
        }
        run -= 1;
        for _ in 0..rng.gen_range(len.clone()) {
            m.cols.push(rng.gen_range(0..cols) as u32);
            m.vals.push(match rng.gen_range(0..16) {
                0 => F::ZERO,
                1 => F::ONE,
                2 => -F::ONE,
                _ => F::rand(rng),
            });
        }
        m.row_starts.push(m.cols.len() as u32);
    }
    m
}

fn check_reduce<E: Curve + GpuCurve>(name: &str, cfg: &Cfg) -> bool {
    let mut ok = true;
    let mut rng = ark_std::test_rng();
    let top = cfg.max_log.max(cfg.max_timed_log.min(22));
    for log in (10..=top).step_by(2) {
        let n = 1usize << log;
        let n_vars = n - n / 8;
        let d = QuotientDomain::<E::ScalarField>::new(n).expect("domain");
        let a = circom_like_matrix::<E::ScalarField>(n, n_vars, &mut rng);
        let b = circom_like_matrix::<E::ScalarField>(n, n_vars, &mut rng);
        let mut w: Vec<E::ScalarField> = (0..n_vars)
            .map(|_| E::ScalarField::rand(&mut rng))
            .collect();
        w[0] = E::ScalarField::ONE;
        w[1] = E::ScalarField::ZERO;
        w[2] = -E::ScalarField::ONE;
        let w_int: Vec<Int<E>> = w.iter().map(|x| x.into_bigint()).collect();
        let run =
            || -> Result<(GpuQuotient<E>, GpuMatrices<E>, DeviceBuf), zkpipe_cuda::CudaError> {
                let q = GpuQuotient::<E>::new(log, d.domain.group_gen, d.coset.offset, 0)?;
                let m = GpuMatrices::<E>::upload(&a, &b, 0)?;
                let mut wd = DeviceBuf::new(0, 32 * n_vars)?;
                let mut pinned = PinnedBuf::new(32 * n_vars)?;
                let pw = pinned.stage(0, &w_int) as *const u8;
                // SAFETY: `pw` holds n_vars scalars of 32 bytes.
                unsafe { wd.upload_raw(pw, 32 * n_vars) }?;
                Ok((q, m, wd))
            };
        let (q, m, wd) = match run() {
            Ok(x) => x,
            Err(e) => {
                println!("{name} reduce 2^{log}: {e}");
                return false;
            }
        };
        let wp = wd.device_ptr(0) as *const [u64; 4];
        let mut cpu = QapEvals::zeroed(n);
        let t = Instant::now();
        reduce(&a, &b, &w, &mut cpu, DEFAULT_SCHEDULE);
        let cpu_ms = t.elapsed().as_secs_f64() * 1e3;
        if log <= cfg.max_log {
            quotient(&d, &mut cpu);
            let mut pinned = PinnedBuf::new(32 * n).expect("pinned buffer");
            let ph = pinned.ptr_at(0) as *mut E::ScalarField;
            let null = std::ptr::null_mut();
            // SAFETY: `wp` holds the matrices' n_vars columns of scalars on GPU 0; null
            // inputs read what reduce_raw left; `ph` has room for n elements.
            let r = unsafe {
                q.reduce_raw(&m, wp)
                    .and_then(|()| q.run_raw(null, null, null, ph))
            };
            let mut h = vec![E::ScalarField::from(0u64); n];
            pinned.unstage(0, &mut h);
            let same = r.is_ok() && h == cpu.a;
            ok &= same;
            println!(
                "{name} reduce on the GPU + quotient 2^{log} ({} entries): {}",
                a.cols.len() + b.cols.len(),
                verdict(same)
            );
            if let Err(e) = r {
                println!("  error: {e}");
            }
        }
        if [20u32, 22].contains(&log) && log <= cfg.max_timed_log {
            // SAFETY: as above.
            match time_runs(cfg.runs, || unsafe { q.reduce_raw(&m, wp) }) {
                Ok(mut ms) => println!(
                    "{name} reduce 2^{log} on the GPU ({} entries, w on the device): {} ({} runs); CPU ({} threads), once: {cpu_ms:.1} ms",
                    a.cols.len() + b.cols.len(),
                    summarize(&mut ms),
                    cfg.runs,
                    rayon::current_num_threads(),
                ),
                Err(e) => {
                    println!("{name} reduce 2^{log}: {e}");
                    ok = false;
                }
            }
        }
    }
    ok
}

/// k scalar vectors of n: vector 0 witness-like (0s, 1s, a few small and full values),
/// the others random with the edge values.
fn batch_vectors<E: Curve>(k: usize, n: usize, rng: &mut impl rand::Rng) -> Vec<Vec<Int<E>>> {
    (0..k)
        .map(|j| {
            if j == 0 {
                (0..n)
                    .map(|i| match i % 7 {
                        0 | 3 => Int::<E>::from(0u64),
                        1 | 2 | 4 => Int::<E>::from(1u64),
                        5 => Int::<E>::from(rng.gen::<u8>() as u64),
                        _ => E::ScalarField::rand(rng).into_bigint(),
                    })
                    .collect()
            } else {
                let mut s = random_scalars::<E>(n, rng);
                let _ = edge_scalars::<E>(&mut s);
                s
            }
        })
        .collect()
}

/// Uploads vectors to the GPU (one device buffer each), as standard integers or, with
/// `mont`, as field elements in Montgomery form.
fn upload_vectors<E: Curve>(vs: &[Vec<Int<E>>], mont: bool) -> Vec<DeviceBuf> {
    fn upload<T>(v: &[T]) -> DeviceBuf {
        let bytes = std::mem::size_of_val(v);
        let mut d = DeviceBuf::new(0, bytes).expect("device buffer");
        // SAFETY: `v` holds `bytes` bytes, the buffer's size.
        unsafe { d.upload_raw(v.as_ptr() as *const u8, bytes) }.expect("upload");
        d
    }
    vs.iter()
        .map(|v| {
            if mont {
                // Field elements are stored in Montgomery form: their bytes are the input.
                let f: Vec<E::ScalarField> = v
                    .iter()
                    .map(|s| E::ScalarField::from_bigint(*s).expect("reduced"))
                    .collect();
                upload(&f)
            } else {
                upload(v)
            }
        })
        .collect()
}

fn plan_of<E: GpuCurve>(bufs: &[DeviceBuf], n: usize, mont: bool) -> Result<BatchPlan<E>, String> {
    let ptrs: Vec<*const [u64; 4]> = bufs.iter().map(|b| b.device_ptr(0) as *const _).collect();
    // SAFETY: each buffer holds n scalars below r on GPU 0, unchanged during the call.
    unsafe { BatchPlan::<E>::new(&ptrs, n, mont, 0) }.map_err(|e| e.to_string())
}

/// The batched MSM of one group against the CPU, then its time per proof against sppark.
fn check_batch<E: Curve + GpuCurve, G: GpuGroup<E>>(
    name: &str,
    group: &str,
    points: &[G::Affine],
    cfg: &Cfg,
    cpu: impl Fn(&[G::Affine], &[Int<E>]) -> G::Point,
) -> bool
where
    G::Affine: AffineRepr,
{
    let mut ok = true;
    let mut rng = ark_std::test_rng();
    for log in [10u32, 14]
        .into_iter()
        .filter(|&l| 1usize << l <= points.len())
    {
        let n = 1usize << log;
        let mut pts = points[..n].to_vec();
        pts[1] = G::Affine::zero();
        for k in [1usize, 3, 8] {
            let vs = batch_vectors::<E>(k, n, &mut rng);
            let want: Vec<_> = vs.iter().map(|v| cpu(&pts, v).into_affine()).collect();
            for mont in [false, true] {
                let bufs = upload_vectors::<E>(&vs, mont);
                let got = Resident::<E, G>::upload(&pts, 0)
                    .map_err(|e| e.to_string())
                    .and_then(|r| {
                        let plan = plan_of::<E>(&bufs, n, mont)?;
                        r.batch_msm(&plan).map_err(|e| e.to_string())
                    });
                let same = matches!(&got, Ok(g) if g.iter().map(|p| p.into_affine()).eq(want.iter().copied()));
                ok &= same;
                println!(
                    "{name} {group} batch MSM 2^{log} k={k}{}: {}",
                    if mont { " (Montgomery scalars)" } else { "" },
                    verdict(same)
                );
                if let Err(e) = got {
                    println!("  error: {e}");
                }
            }
        }
        // A set padded with 5 points at infinity, as [C]₁ is past the public inputs.
        let pad = 5;
        let vs = batch_vectors::<E>(3, n, &mut rng);
        let want: Vec<_> = vs
            .iter()
            .map(|v| cpu(&pts[pad..], &v[pad..]).into_affine())
            .collect();
        let bufs = upload_vectors::<E>(&vs, false);
        let got = Resident::<E, G>::upload_padded(&pts[pad..], pad, 0)
            .map_err(|e| e.to_string())
            .and_then(|r| {
                let plan = plan_of::<E>(&bufs, n, false)?;
                r.batch_msm(&plan).map_err(|e| e.to_string())
            });
        let same =
            matches!(&got, Ok(g) if g.iter().map(|p| p.into_affine()).eq(want.iter().copied()));
        ok &= same;
        println!(
            "{name} {group} batch MSM 2^{log} k=3, padded set: {}",
            verdict(same)
        );
    }
    // Time per proof: sppark's MSM of one device vector, and batches of k.
    for log in [14u32, 16]
        .into_iter()
        .filter(|&l| 1usize << l <= points.len())
    {
        let n = 1usize << log;
        let r = match Resident::<E, G>::upload(&points[..n], 0) {
            Ok(r) => r,
            Err(e) => {
                println!("{name} {group} upload 2^{log}: {e}");
                return false;
            }
        };
        let vs: Vec<Vec<Int<E>>> = (0..32).map(|_| random_scalars::<E>(n, &mut rng)).collect();
        let bufs = upload_vectors::<E>(&vs, false);
        let p0 = bufs[0].device_ptr(0) as *const [u64; 4];
        // SAFETY: n scalars on GPU 0.
        if let Ok(mut ms) = time_runs(cfg.runs, || unsafe { r.msm_device(p0, n, false) }) {
            println!(
                "{name} {group} MSM 2^{log} sppark, one vector on the device: {}",
                summarize(&mut ms)
            );
        }
        for k in [1usize, 4, 16, 32] {
            let run = || {
                plan_of::<E>(&bufs[..k], n, false)
                    .and_then(|p| r.batch_msm(&p).map_err(|e| e.to_string()))
            };
            match time_runs(cfg.runs, run) {
                Ok(mut ms) => {
                    let per: Vec<f64> = ms.iter().map(|m| m / k as f64).collect();
                    let mut per = per;
                    println!(
                        "{name} {group} batch MSM 2^{log} k={k} (plan + run): {}; per proof median {:.3} ms",
                        summarize(&mut ms),
                        { per.sort_by(f64::total_cmp); per[per.len() / 2] }
                    );
                }
                Err(e) => {
                    println!("{name} {group} batch MSM 2^{log} k={k}: {e}");
                    ok = false;
                }
            }
        }
    }
    ok
}

fn check_batches<E: Curve + GpuCurve>(name: &str, cfg: &Cfg) -> bool {
    let mut rng = ark_std::test_rng();
    let n = 1usize << 16;
    let multiples: Vec<E::ScalarField> = (0..n).map(|_| E::ScalarField::rand(&mut rng)).collect();
    let g1: Vec<E::G1Affine> = E::G1::generator().batch_mul(&multiples);
    let g2: Vec<E::G2Affine> = E::G2::generator().batch_mul(&multiples);
    let ok1 = check_batch::<E, G1>(name, "G1", &g1, cfg, E::G1::msm_bigint);
    let ok2 = check_batch::<E, G2>(name, "G2", &g2, cfg, E::G2::msm_bigint);
    ok1 && ok2
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut next = |d: u32| args.next().and_then(|a| a.parse().ok()).unwrap_or(d);
    let cfg = Cfg {
        max_log: next(22),
        runs: next(7) as usize,
        max_timed_log: next(24),
    };
    let batch_only = std::env::args().nth(4).as_deref() == Some("batch");
    match zkpipe_cuda::device_info(0) {
        Ok(d) => println!(
            "device: {} ({} MiB free of {} MiB)",
            d.name,
            d.free_bytes >> 20,
            d.total_bytes >> 20
        ),
        Err(e) => {
            println!("no device: {e}");
            std::process::exit(1);
        }
    }
    let mut ok = true;
    if !batch_only {
        ok &= check_quotient::<ark_bn254::Bn254>("BN254", &cfg);
        ok &= check_quotient::<ark_bls12_381::Bls12_381>("BLS12-381", &cfg);
        ok &= check_reduce::<ark_bn254::Bn254>("BN254", &cfg);
        ok &= check_reduce::<ark_bls12_381::Bls12_381>("BLS12-381", &cfg);
        ok &= check_g1::<ark_bn254::Bn254>("BN254", &cfg);
        ok &= check_g1::<ark_bls12_381::Bls12_381>("BLS12-381", &cfg);
        ok &= check_g2::<ark_bn254::Bn254>("BN254", &cfg);
        ok &= check_g2::<ark_bls12_381::Bls12_381>("BLS12-381", &cfg);
    }
    ok &= check_batches::<ark_bn254::Bn254>("BN254", &cfg);
    ok &= check_batches::<ark_bls12_381::Bls12_381>("BLS12-381", &cfg);
    println!("{}", if ok { "ALL OK" } else { "FAILURES" });
    if !ok {
        std::process::exit(1);
    }
}
