//! The batched MSM (k scalar vectors against one resident point set in one pass), G1 and
//! G2, at 2^10 and 2^14 with k = 1, 3, 8, each on a set without and with a window table:
//! witness-like vectors (mostly 0 and 1, so one bucket holds thousands of entries),
//! random ones, Montgomery-form input, and a set padded with points at infinity (as [C]₁
//! is); every witness distribution (all zeros, all ones, mixed, random, all r − 1) alone,
//! with and without constant-work MSMs; then its time per proof against sppark's
//! one-vector MSM, with and without the table, and a lone vector's time by distribution,
//! with and without constant work (the spread that mode narrows).

use crate::common::{edge_scalars, random_scalars, summarize, time_runs, verdict, Cfg};
use ark_ec::scalar_mul::ScalarMul;
use ark_ec::{AffineRepr, CurveGroup, PrimeGroup};
use ark_ff::PrimeField;
use ark_std::UniformRand;
use zkpipe_core::msm::ScalarInt;
use zkpipe_core::{cpu, Curve, Error};
use zkpipe_cuda::{BatchPlan, DeviceBuf, GpuCurve, GpuGroup, Resident, G1, G2};

/// k scalar vectors of n: vector 0 witness-like (0s, 1s, a few small and full values),
/// the others random with the edge values.
fn batch_vectors<E: Curve>(k: usize, n: usize, rng: &mut impl rand::Rng) -> Vec<Vec<ScalarInt<E>>> {
    (0..k)
        .map(|j| {
            if j == 0 {
                (0..n)
                    .map(|i| match i % 7 {
                        0 | 3 => ScalarInt::<E>::from(0u64),
                        1 | 2 | 4 => ScalarInt::<E>::from(1u64),
                        5 => ScalarInt::<E>::from(rng.gen::<u8>() as u64),
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
fn upload_vectors<E: Curve>(vs: &[Vec<ScalarInt<E>>], mont: bool) -> Vec<DeviceBuf> {
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

/// A plan of `bufs` for the set `r` (its window table, if it has one).
fn plan_of<E: GpuCurve, G: GpuGroup<E>>(
    r: &Resident<E, G>,
    bufs: &[DeviceBuf],
    n: usize,
    mont: bool,
    constant_work: bool,
) -> Result<BatchPlan<E>, String> {
    let ptrs: Vec<*const [u64; 4]> = bufs.iter().map(|b| b.device_ptr(0) as *const _).collect();
    let table = r.table_wbits();
    // SAFETY: each buffer holds n scalars below r on GPU 0, unchanged during the call.
    let opts = zkpipe_cuda::CudaOptions::default();
    unsafe { BatchPlan::<E>::new(&ptrs, n, mont, constant_work, table, 0, &opts) }
        .map_err(|e| e.to_string())
}

/// `points` after `pad` points at infinity on GPU 0, with a window table or without.
fn resident<E: GpuCurve, G: GpuGroup<E>>(
    points: &[G::Affine],
    pad: usize,
    tabled: bool,
) -> Result<Resident<E, G>, String> {
    Resident::<E, G>::upload_tabled(points, pad, tabled, 0).map_err(|e| e.to_string())
}

/// ", window table" for a tabled run's lines.
fn table_note(tabled: bool) -> &'static str {
    if tabled {
        ", window table"
    } else {
        ""
    }
}

/// The witness distributions every path must get right: the names and one vector each.
pub(crate) fn distributions<E: Curve>(
    n: usize,
    rng: &mut impl rand::Rng,
) -> Vec<(&'static str, Vec<ScalarInt<E>>)> {
    let one = ScalarInt::<E>::from(1u64);
    let r_minus_1 = (-E::ScalarField::from(1u64)).into_bigint();
    vec![
        ("all zeros", vec![ScalarInt::<E>::from(0u64); n]),
        ("all ones", vec![one; n]),
        (
            "mixed (witness-like)",
            batch_vectors::<E>(1, n, rng).remove(0),
        ),
        ("random", random_scalars::<E>(n, rng)),
        ("all r - 1", vec![r_minus_1; n]),
    ]
}

/// The batched MSM of one group against the CPU, then its time per proof against sppark.
fn check_batch<E: Curve + GpuCurve, G: GpuGroup<E>>(
    name: &str,
    group: &str,
    points: &[G::Affine],
    cfg: &Cfg,
    cpu: impl Fn(&[G::Affine], &[ScalarInt<E>]) -> Result<G::Point, Error>,
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
            let want: Vec<_> = vs
                .iter()
                .map(|v| cpu(&pts, v).expect("lengths").into_affine())
                .collect();
            for (mont, tabled) in [(false, false), (true, false), (false, true), (true, true)] {
                let bufs = upload_vectors::<E>(&vs, mont);
                let got = resident::<E, G>(&pts, 0, tabled).and_then(|r| {
                    let plan = plan_of(&r, &bufs, n, mont, false)?;
                    r.batch_msm(&plan).map_err(|e| e.to_string())
                });
                let same = matches!(&got, Ok(g) if g.iter().map(|p| p.into_affine()).eq(want.iter().copied()));
                ok &= same;
                println!(
                    "{name} {group} batch MSM 2^{log} k={k}{}{}: {}",
                    if mont { " (Montgomery scalars)" } else { "" },
                    table_note(tabled),
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
            .map(|v| cpu(&pts[pad..], &v[pad..]).expect("lengths").into_affine())
            .collect();
        let bufs = upload_vectors::<E>(&vs, false);
        for tabled in [false, true] {
            let got = resident::<E, G>(&pts[pad..], pad, tabled).and_then(|r| {
                let plan = plan_of(&r, &bufs, n, false, false)?;
                r.batch_msm(&plan).map_err(|e| e.to_string())
            });
            let same =
                matches!(&got, Ok(g) if g.iter().map(|p| p.into_affine()).eq(want.iter().copied()));
            ok &= same;
            println!(
                "{name} {group} batch MSM 2^{log} k=3, padded set{}: {}",
                table_note(tabled),
                verdict(same)
            );
        }
        // Each distribution alone (k = 1, a lone proof's path), both modes, both sets.
        for tabled in [false, true] {
            let set = resident::<E, G>(&pts, 0, tabled);
            for (dist, v) in distributions::<E>(n, &mut rng) {
                let want = cpu(&pts, &v).expect("lengths").into_affine();
                let bufs = upload_vectors::<E>(std::slice::from_ref(&v), false);
                for constant in [false, true] {
                    let got = set.as_ref().map_err(Clone::clone).and_then(|r| {
                        let plan = plan_of(r, &bufs, n, false, constant)?;
                        r.batch_msm(&plan).map_err(|e| e.to_string())
                    });
                    let same = matches!(&got, Ok(g) if g.len() == 1 && g[0].into_affine() == want);
                    ok &= same;
                    println!(
                        "{name} {group} batch MSM 2^{log} k=1, {dist}{}{}: {}",
                        if constant { ", constant work" } else { "" },
                        table_note(tabled),
                        verdict(same)
                    );
                    if let Err(e) = got {
                        println!("  error: {e}");
                    }
                }
            }
        }
        // A plan for a table the set does not have is refused, not run.
        if let (Ok(plain), Ok(tabled)) = (
            resident::<E, G>(&pts, 0, false),
            resident::<E, G>(&pts, 0, true),
        ) {
            let bufs = upload_vectors::<E>(&vs[..1], false);
            let refused = plan_of(&tabled, &bufs, n, false, false)
                .is_ok_and(|p| plain.batch_msm(&p).is_err());
            ok &= refused;
            println!(
                "{name} {group} batch MSM 2^{log}: a table's plan on a set without it is refused: {}",
                verdict(refused)
            );
        }
    }
    // Time per proof: sppark's MSM of one device vector, and batches of k.
    for log in [13u32, 14, 16, 18, 20]
        .into_iter()
        .filter(|&l| 1usize << l <= points.len() && l <= cfg.max_timed_log)
    {
        let n = 1usize << log;
        let r = match Resident::<E, G>::upload(&points[..n], 0) {
            Ok(r) => r,
            Err(e) => {
                println!("{name} {group} upload 2^{log}: {e}");
                return false;
            }
        };
        let started = std::time::Instant::now();
        let rt = match Resident::<E, G>::upload_tabled(&points[..n], 0, true, 0) {
            Ok(r) => r,
            Err(e) => {
                println!("{name} {group} upload 2^{log} with a window table: {e}");
                return false;
            }
        };
        println!(
            "{name} {group} window table 2^{log}: {} bits, {:.1} MiB on the device ({:.1} MiB without), upload and build {:.1} ms",
            rt.table_wbits(),
            rt.device_bytes() as f64 / (1u64 << 20) as f64,
            r.device_bytes() as f64 / (1u64 << 20) as f64,
            started.elapsed().as_secs_f64() * 1e3
        );
        let kmax = if log <= 16 { 32 } else { 1 };
        let vs: Vec<Vec<ScalarInt<E>>> = (0..kmax)
            .map(|_| random_scalars::<E>(n, &mut rng))
            .collect();
        let bufs = upload_vectors::<E>(&vs, false);
        let p0 = bufs[0].device_ptr(0) as *const [u64; 4];
        // SAFETY: n scalars on GPU 0.
        if let Ok(mut ms) = time_runs(cfg.runs, || unsafe { r.msm_device(p0, n, false) }) {
            println!(
                "{name} {group} MSM 2^{log} sppark, one vector on the device: {}",
                summarize(&mut ms)
            );
        }
        for k in [1usize, 4, 16, 32].into_iter().filter(|&k| k <= kmax) {
            for (set, tabled) in [(&r, false), (&rt, true)] {
                let run = || {
                    plan_of(set, &bufs[..k], n, false, false)
                        .and_then(|p| set.batch_msm(&p).map_err(|e| e.to_string()))
                };
                match time_runs(cfg.runs, run) {
                    Ok(mut ms) => {
                        let mut per: Vec<f64> = ms.iter().map(|m| m / k as f64).collect();
                        println!(
                            "{name} {group} batch MSM 2^{log} k={k}{} (plan + run): {}; per proof median {:.3} ms",
                            table_note(tabled),
                            summarize(&mut ms),
                            summarize_median(&mut per)
                        );
                    }
                    Err(e) => {
                        println!(
                            "{name} {group} batch MSM 2^{log} k={k}{}: {e}",
                            table_note(tabled)
                        );
                        ok = false;
                    }
                }
            }
        }
        // A lone vector by distribution: value-dependent shortcuts, then constant work.
        if log == 13 || log == 16 {
            for (dist, v) in distributions::<E>(n, &mut rng) {
                let bufs = upload_vectors::<E>(std::slice::from_ref(&v), false);
                let p0 = bufs[0].device_ptr(0) as *const [u64; 4];
                // SAFETY: n scalars on GPU 0.
                let sppark = time_runs(cfg.runs, || unsafe { r.msm_device(p0, n, false) });
                let mut line = format!("{name} {group} lone MSM 2^{log}, {dist}:");
                if let Ok(mut ms) = sppark {
                    line += &format!(" sppark median {:.3} ms;", summarize_median(&mut ms));
                }
                for (set, tabled) in [(&r, false), (&rt, true)] {
                    for constant in [false, true] {
                        let run = || {
                            plan_of(set, &bufs, n, false, constant)
                                .and_then(|p| set.batch_msm(&p).map_err(|e| e.to_string()))
                        };
                        if let Ok(mut ms) = time_runs(cfg.runs, run) {
                            line += &format!(
                                " batch{}{} {};",
                                if tabled { " tabled" } else { "" },
                                if constant { " constant-work" } else { "" },
                                summarize(&mut ms)
                            );
                        }
                    }
                }
                println!("{line}");
            }
        }
    }
    ok
}

fn summarize_median(ms: &mut [f64]) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

/// The batched MSM of G1 and G2 against the CPU, then its time per proof.
pub fn check_batches<E: Curve + GpuCurve>(name: &str, cfg: &Cfg) -> bool {
    let mut rng = ark_std::test_rng();
    // G1 up to 2^20 points (timed up to there), G2 up to 2^16.
    let n = 1usize << cfg.max_timed_log.clamp(16, 20);
    let multiples: Vec<E::ScalarField> = (0..n).map(|_| E::ScalarField::rand(&mut rng)).collect();
    let g1: Vec<E::G1Affine> = E::G1::generator().batch_mul(&multiples);
    let g2: Vec<E::G2Affine> = E::G2::generator().batch_mul(&multiples[..1 << 16]);
    let ok1 = check_batch::<E, G1>(name, "G1", &g1, cfg, cpu::msm_g1::<E>);
    let ok2 = check_batch::<E, G2>(name, "G2", &g2, cfg, cpu::msm_g2::<E>);
    ok1 && ok2
}
