//! What every check shares: its settings, random and edge-case scalars, verdicts and
//! timing summaries.

use ark_ff::{BigInteger, PrimeField};
use ark_std::UniformRand;
use std::time::Instant;
use zkpipe_core::msm::ScalarInt;
use zkpipe_core::Curve;

/// Command-line settings: sizes checked against the CPU, repetitions, sizes timed.
pub struct Cfg {
    /// Checks against the CPU run at 2^10..2^max_log.
    pub max_log: u32,
    /// Timed runs after one warm-up.
    pub runs: usize,
    /// Timings stop at 2^max_timed_log.
    pub max_timed_log: u32,
}

/// `n` random scalars as MSM inputs.
pub fn random_scalars<E: Curve>(n: usize, rng: &mut impl rand::Rng) -> Vec<ScalarInt<E>> {
    (0..n)
        .map(|_| E::ScalarField::rand(rng).into_bigint())
        .collect()
}

/// Zero scalars and r − 1; returns a copy with r + 5 (a scalar ≥ r) at n/3.
pub fn edge_scalars<E: Curve>(s: &mut [ScalarInt<E>]) -> Vec<ScalarInt<E>> {
    let n = s.len();
    s[0] = Default::default();
    s[n / 2] = (-E::ScalarField::from(1u64)).into_bigint();
    let mut too_big = s.to_vec();
    let mut big = E::ScalarField::MODULUS;
    big.add_with_carry(&ScalarInt::<E>::from(5u64));
    too_big[n / 3] = big;
    too_big
}

/// The GPU must refuse a scalar ≥ r rather than return a wrong sum.
pub fn refused<T>(r: Result<T, zkpipe_cuda::CudaError>, n: usize) -> bool {
    matches!(r, Err(zkpipe_cuda::CudaError::ScalarOutOfRange { index }) if index == n / 3)
}

/// A check's line ending.
pub fn verdict(ok: bool) -> &'static str {
    if ok {
        "OK (matches CPU)"
    } else {
        "MISMATCH"
    }
}

/// min, median and max of `ms`.
pub fn summarize(ms: &mut [f64]) -> String {
    ms.sort_by(f64::total_cmp);
    format!(
        "min {:.2} ms, median {:.2} ms, max {:.2} ms",
        ms[0],
        ms[ms.len() / 2],
        ms[ms.len() - 1]
    )
}

/// Runs `f` warm-up + `runs` times, returns the measured milliseconds.
pub fn time_runs<T, E2>(runs: usize, mut f: impl FnMut() -> Result<T, E2>) -> Result<Vec<f64>, E2> {
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

/// The milliseconds `f` takes, once, and its result.
pub fn once<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed().as_secs_f64() * 1e3)
}
