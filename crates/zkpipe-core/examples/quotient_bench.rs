//! The CPU quotient stage against the same stage on arkworks' FFTs (inverse FFT and coset
//! FFT of a, b, c, then the pointwise step), interleaved, on one machine:
//!
//! ```text
//! cargo run --release -p zkpipe-core --example quotient_bench -- [log2_n] [runs] [threads,..]
//! ```
//!
//! BN254's scalar field. zkpipe runs twice: with the IFMA lanes where the CPU has them, and
//! with its scalar loops (a transform made with lanes off). Prints one line
//! per (threads, implementation): min / median / max milliseconds, and checks that all give
//! the same h; and the time zkpipe's share spends making the transform's tables.

use ark_ff::UniformRand;
use ark_poly::EvaluationDomain;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::time::Instant;
use zkpipe_core::quotient::{pointwise, quotient, quotient_with, QuotientDomain};
use zkpipe_core::reduce::QapEvals;

type F = ark_bn254::Fr;

/// The stage on arkworks' transforms: the baseline the IFMA transform is measured against
/// (lab/experiments/028-quotient-ntt.md).
fn arkworks_quotient(d: &QuotientDomain<F>, evals: &mut QapEvals<F>) {
    let to_coset = |v: &mut Vec<F>| {
        d.domain.ifft_in_place(v);
        d.coset.fft_in_place(v);
    };
    let QapEvals { a, b, c } = evals;
    rayon::join(
        || to_coset(a),
        || rayon::join(|| to_coset(b), || to_coset(c)),
    );
    pointwise(evals);
}

fn stats(v: &mut [f64]) -> String {
    v.sort_by(f64::total_cmp);
    format!("{:8.2} {:8.2} {:8.2}", v[0], v[v.len() / 2], v[v.len() - 1])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let log_n: u32 = args.get(1).map_or(16, |s| s.parse().expect("log2_n"));
    let runs: usize = args.get(2).map_or(10, |s| s.parse().expect("runs"));
    let threads: Vec<usize> = args.get(3).map_or(vec![rayon::current_num_threads()], |s| {
        s.split(',').map(|t| t.parse().expect("threads")).collect()
    });
    let n = 1usize << log_n;
    let d = QuotientDomain::<F>::new(n).expect("domain");
    let mut rng = ChaCha20Rng::seed_from_u64(n as u64);
    let mut vec = || (0..n).map(|_| F::rand(&mut rng)).collect::<Vec<F>>();
    let input = QapEvals {
        a: vec(),
        b: vec(),
        c: vec(),
    };
    println!("quotient 2^{log_n}: min / median / max ms over {runs} runs");
    for &t in &threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .expect("pool");
        let (mut lanes, mut scalar, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
        let mut tables = Vec::new();
        for _ in 0..runs {
            let start = Instant::now();
            drop(pool.install(|| d.transform()));
            tables.push(start.elapsed().as_secs_f64() * 1e3);
            let (mut x, mut y, mut z) = (input.clone(), input.clone(), input.clone());
            let start = Instant::now();
            pool.install(|| quotient(&d, &mut x));
            lanes.push(start.elapsed().as_secs_f64() * 1e3);
            let start = Instant::now();
            pool.install(|| quotient_with(&d.transform_with(false), &mut z));
            scalar.push(start.elapsed().as_secs_f64() * 1e3);
            let start = Instant::now();
            pool.install(|| arkworks_quotient(&d, &mut y));
            theirs.push(start.elapsed().as_secs_f64() * 1e3);
            assert!(x.a == y.a && z.a == y.a, "the quotients differ");
        }
        println!("threads {t:3}  zkpipe ifma   {}", stats(&mut lanes));
        println!("threads {t:3}  zkpipe scalar {}", stats(&mut scalar));
        println!("threads {t:3}  arkworks      {}", stats(&mut theirs));
        println!("threads {t:3}  (ifma tables  {})", stats(&mut tables));
    }
}
