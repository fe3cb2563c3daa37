//! The quotient stage (3 iNTT + 3 coset NTT + a·b − c) against the CPU's, and the reduce
//! on the GPU (a = A·w, b = B·w, c = a∘b from resident matrices of circom-like rows: runs
//! of 1-term, 2–8-term, 16–64-term and rare 128–512-term rows, with 0, 1 and r − 1 among
//! the values and w) followed by the quotient, against the CPU's reduce and quotient.

use crate::common::{summarize, time_runs, verdict, Cfg};
use ark_ec::AdditiveGroup;
use ark_ff::{Field, PrimeField};
use ark_std::UniformRand;
use std::time::Instant;
use zkpipe_core::csr::Csr;
use zkpipe_core::msm::ScalarInt;
use zkpipe_core::quotient::{quotient, QuotientDomain};
use zkpipe_core::reduce::{reduce, QapEvals, DEFAULT_SCHEDULE};
use zkpipe_core::Curve;
use zkpipe_cuda::{DeviceBuf, GpuCurve, GpuMatrices, GpuQuotient, PinnedBuf};

/// The quotient stage against the CPU's, then its timings with transfers.
pub fn check_quotient<E: Curve + GpuCurve>(name: &str, cfg: &Cfg) -> bool {
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
                "{name} quotient 2^{log} CPU ({} threads, zkpipe's transform), once: {:.1} ms",
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

/// The reduce on the GPU from resident circom-like matrices, followed by the quotient,
/// against the CPU's reduce and quotient, with the witness uploaded as standard-form
/// scalars and as Montgomery-form field elements; then the reduce's timings.
pub fn check_reduce<E: Curve + GpuCurve>(name: &str, cfg: &Cfg) -> bool {
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
        let w_int: Vec<ScalarInt<E>> = w.iter().map(|x| x.into_bigint()).collect();
        type Uploaded<E> = (GpuQuotient<E>, GpuMatrices<E>, DeviceBuf, DeviceBuf);
        let run = || -> Result<Uploaded<E>, zkpipe_cuda::CudaError> {
            let q = GpuQuotient::<E>::new(log, d.domain.group_gen, d.coset.offset, 0)?;
            let m = GpuMatrices::<E>::upload(&a, &b, 0)?;
            let (mut wd, mut wm) = (
                DeviceBuf::new(0, 32 * n_vars)?,
                DeviceBuf::new(0, 32 * n_vars)?,
            );
            let mut pinned = PinnedBuf::new(32 * n_vars)?;
            let pw = pinned.stage(0, &w_int) as *const u8;
            // SAFETY: `pw` holds n_vars scalars of 32 bytes.
            unsafe { wd.upload_raw(pw, 32 * n_vars) }?;
            let pm = pinned.stage(0, &w) as *const u8;
            // SAFETY: `pm` holds n_vars field elements of 32 bytes.
            unsafe { wm.upload_raw(pm, 32 * n_vars) }?;
            Ok((q, m, wd, wm))
        };
        let (q, m, wd, wm) = match run() {
            Ok(x) => x,
            Err(e) => {
                println!("{name} reduce 2^{log}: {e}");
                return false;
            }
        };
        let wp = wd.device_ptr(0) as *const [u64; 4];
        let wmp = wm.device_ptr(0) as *const [u64; 4];
        let mut cpu = QapEvals::zeroed(n);
        let t = Instant::now();
        reduce(&a, &b, &w, &mut cpu, DEFAULT_SCHEDULE);
        let cpu_ms = t.elapsed().as_secs_f64() * 1e3;
        if log <= cfg.max_log {
            quotient(&d, &mut cpu);
            let mut pinned = PinnedBuf::new(32 * n).expect("pinned buffer");
            let ph = pinned.ptr_at(0) as *mut E::ScalarField;
            let null = std::ptr::null_mut();
            for (form, at, mont) in [("scalars", wp, false), ("Montgomery", wmp, true)] {
                // SAFETY: `at` holds the matrices' n_vars columns of values on GPU 0; null
                // inputs read what reduce_raw left; `ph` has room for n elements.
                let r = unsafe {
                    q.reduce_raw(&m, at, mont)
                        .and_then(|()| q.run_raw(null, null, null, ph))
                };
                let mut h = vec![E::ScalarField::from(0u64); n];
                pinned.unstage(0, &mut h);
                let same = r.is_ok() && h == cpu.a;
                ok &= same;
                println!(
                    "{name} reduce on the GPU + quotient 2^{log} ({} entries, w as {form}): {}",
                    a.cols.len() + b.cols.len(),
                    verdict(same)
                );
                if let Err(e) = r {
                    println!("  error: {e}");
                }
            }
            ok &= check_one_call(name, log, &q, &m, &a, &b, &d, &w, &cpu.a);
        }
        if [20u32, 22].contains(&log) && log <= cfg.max_timed_log {
            // SAFETY: as above.
            match time_runs(cfg.runs, || unsafe { q.reduce_raw(&m, wmp, true) }) {
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

/// The one-call path (`GpuQuotient::reduce_quotient_raw`, lab 042q) against the CPU: w
/// from pinned memory, the kernels as the quotient's graph (captured, then replayed with
/// other values at the same addresses: `w2`, one value changed) and one by one; each w
/// form in turn, so the graph is captured again when the form changes. `h` is the CPU's
/// h for `w`.
#[allow(clippy::too_many_arguments)]
fn check_one_call<E: Curve + GpuCurve>(
    name: &str,
    log: u32,
    q: &GpuQuotient<E>,
    m: &GpuMatrices<E>,
    a: &Csr<E::ScalarField>,
    b: &Csr<E::ScalarField>,
    d: &QuotientDomain<E::ScalarField>,
    w: &[E::ScalarField],
    h: &[E::ScalarField],
) -> bool {
    let n = 1usize << log;
    let mut w2 = w.to_vec();
    w2[3] += E::ScalarField::ONE;
    let mut h2 = QapEvals::zeroed(n);
    reduce(a, b, &w2, &mut h2, DEFAULT_SCHEDULE);
    quotient(d, &mut h2);
    let bytes = 32 * w.len();
    let (mut staging, mut out) = match (PinnedBuf::new(bytes), PinnedBuf::new(32 * n)) {
        (Ok(s), Ok(o)) => (s, o),
        _ => {
            println!("{name} one-call reduce + quotient 2^{log}: no pinned memory");
            return false;
        }
    };
    let mut wd = match DeviceBuf::new(0, bytes) {
        Ok(x) => x,
        Err(e) => {
            println!("{name} one-call reduce + quotient 2^{log}: {e}");
            return false;
        }
    };
    let mut ok = true;
    for mont in [false, true] {
        let form = if mont { "Montgomery" } else { "scalars" };
        let steps = [
            ("graph, captured", true, w, h),
            ("graph, replayed on other values", true, &w2[..], &h2.a[..]),
            ("kernel by kernel", false, w, h),
        ];
        for (how, graph, values, want) in steps {
            let pw = if mont {
                staging.stage(0, values) as *const u8
            } else {
                let ints: Vec<ScalarInt<E>> = values.iter().map(|x| x.into_bigint()).collect();
                staging.stage(0, &ints) as *const u8
            };
            // SAFETY: `wd` holds the matrices' columns of 32-byte values on GPU 0, `pw`
            // as many in pinned memory; h is read back after the call has waited for it.
            let r = unsafe {
                q.reduce_quotient_raw(m, wd.device_ptr_mut(), pw, bytes, mont, graph)
                    .and_then(|_| out.download_raw(0, q.h_on_device() as *const u8, 32 * n))
            };
            let mut got = vec![E::ScalarField::ZERO; n];
            out.unstage(0, &mut got);
            let same = r.is_ok() && got == want;
            ok &= same;
            println!(
                "{name} one-call reduce + quotient 2^{log} ({how}, w as {form}): {}",
                verdict(same)
            );
            if let Err(e) = r {
                println!("  error: {e}");
            }
        }
    }
    ok
}
