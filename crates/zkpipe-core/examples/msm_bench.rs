//! arkworks `msm_bigint` against `zkpipe_core::msm::pippenger::msm`, interleaved, on one
//! machine:
//!
//! ```text
//! cargo run --release -p zkpipe-core --example msm_bench -- [log2_n] [runs] [threads,..] [groups] [window_bits]
//! ```
//!
//! `groups` is a comma list of bn254-g1, bn254-g2, bls12-381-g1, bls12-381-g2 (default
//! all); `window_bits` forces the window width (default: the planner's choice). Prints one
//! line per (group, threads, implementation): min / median / max milliseconds, and checks
//! that both implementations agree.

use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ec::{CurveGroup, VariableBaseMSM};
use ark_ff::{PrimeField, UniformRand};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::time::Instant;
use zkpipe_core::msm::pippenger::{self, BigIntOf, MsmPlan};

fn inputs<P: SWCurveConfig>(n: usize) -> (Vec<Affine<P>>, Vec<BigIntOf<P>>) {
    let mut rng = ChaCha20Rng::seed_from_u64(n as u64);
    let seeds: Vec<Projective<P>> = (0..7).map(|_| Projective::rand(&mut rng)).collect();
    let mut acc = Projective::<P>::rand(&mut rng);
    let proj: Vec<Projective<P>> = (0..n)
        .map(|i| {
            acc += seeds[i % seeds.len()];
            acc
        })
        .collect();
    let scalars = (0..n)
        .map(|_| P::ScalarField::rand(&mut rng).into_bigint())
        .collect();
    (Projective::normalize_batch(&proj), scalars)
}

fn stats(v: &mut [f64]) -> String {
    v.sort_by(f64::total_cmp);
    format!("{:8.1} {:8.1} {:8.1}", v[0], v[v.len() / 2], v[v.len() - 1])
}

fn bench<P: SWCurveConfig>(
    name: &str,
    log_n: usize,
    runs: usize,
    threads: &[usize],
    c: Option<usize>,
) {
    let n = 1usize << log_n;
    let (bases, scalars) = inputs::<P>(n);
    for &t in threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .expect("pool");
        let plan = pool.install(|| {
            let mut p = MsmPlan::choose::<P>(n, 254, t);
            if let Some(c) = c {
                p.window_bits = c;
            }
            // MSM_BENCH_CHUNK overrides the points per sorting pass (tuning only).
            if let Some(ch) = std::env::var("MSM_BENCH_CHUNK")
                .ok()
                .and_then(|s| s.parse().ok())
            {
                p.chunk = ch;
            }
            // MSM_BENCH_GROUPS overrides the point groups per window (tuning only).
            if let Some(g) = std::env::var("MSM_BENCH_GROUPS")
                .ok()
                .and_then(|s| s.parse().ok())
            {
                p.groups = g;
            }
            p
        });
        let (mut ark, mut ours) = (Vec::new(), Vec::new());
        let (mut ark_cpu, mut ours_cpu) = (Vec::new(), Vec::new());
        // MSM_BENCH_ONLY=ours (or ark) runs one side only, for profiling.
        let only = std::env::var("MSM_BENCH_ONLY").unwrap_or_default();
        // One unmeasured round: warms caches and lets the previous pool's threads exit
        // (a thread that exits mid-measurement would take its CPU time with it).
        for round in 0..=runs {
            if round == 0 {
                let _ = pool
                    .install(|| Projective::<P>::msm_bigint(&bases[..n / 8], &scalars[..n / 8]));
                let _ = pool
                    .install(|| pippenger::msm_with_plan(&bases[..n / 8], &scalars[..n / 8], plan));
                continue;
            }
            let (t0, c0) = (Instant::now(), cpu_ms());
            let a = (only != "ours")
                .then(|| pool.install(|| Projective::<P>::msm_bigint(&bases, &scalars)));
            ark.push(t0.elapsed().as_secs_f64() * 1e3);
            ark_cpu.push(cpu_ms() - c0);
            let (t0, c0) = (Instant::now(), cpu_ms());
            let b = (only != "ark")
                .then(|| pool.install(|| pippenger::msm_with_plan(&bases, &scalars, plan)));
            ours.push(t0.elapsed().as_secs_f64() * 1e3);
            ours_cpu.push(cpu_ms() - c0);
            if let (Some(a), Some(b)) = (a, b) {
                assert_eq!(a, b, "{name}: results differ");
            }
        }
        let (ma, mo) = (median(&ark), median(&ours));
        let (mac, moc) = (median(&ark_cpu), median(&ours_cpu));
        println!(
            "{name:13} 2^{log_n} t={t} arkworks   {}  cpu {}",
            stats(&mut ark),
            stats(&mut ark_cpu)
        );
        println!(
            "{name:13} 2^{log_n} t={t} pippenger  {}  cpu {}  c={} groups={}  speed-up(median wall) {:.2}x (cpu) {:.2}x",
            stats(&mut ours),
            stats(&mut ours_cpu),
            plan.window_bits,
            plan.groups,
            ma / mo,
            mac / moc
        );
    }
}

/// CPU time of all this process's threads so far, in ms (from /proc; 0 where missing).
/// On a shared machine it is steadier than wall time.
fn cpu_ms() -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .sum::<f64>()
        / 1e6
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let log_n = args.first().and_then(|s| s.parse().ok()).unwrap_or(16);
    let runs = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let threads: Vec<usize> = args
        .get(2)
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2]);
    let groups = args.get(3).cloned().unwrap_or_else(|| "all".into());
    let c = args.get(4).and_then(|s| s.parse().ok());
    let want = |g: &str| groups == "all" || groups.split(',').any(|x| x == g);
    println!("group         size  threads impl   wall ms: min median max   cpu ms (all threads): min median max");
    if want("bn254-g1") {
        bench::<ark_bn254::g1::Config>("bn254-g1", log_n, runs, &threads, c);
    }
    if want("bn254-g2") {
        bench::<ark_bn254::g2::Config>("bn254-g2", log_n, runs, &threads, c);
    }
    if want("bls12-381-g1") {
        bench::<ark_bls12_381::g1::Config>("bls12-381-g1", log_n, runs, &threads, c);
    }
    if want("bls12-381-g2") {
        bench::<ark_bls12_381::g2::Config>("bls12-381-g2", log_n, runs, &threads, c);
    }
}
