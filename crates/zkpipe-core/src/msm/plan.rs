//! How one MSM is cut into work: the window width and point groups per window
//! ([`MsmPlan`] and its cost model), the signed c-bit digit that picks a scalar's bucket in
//! each window, and how many points one sorting pass takes.

use ark_ec::short_weierstrass::{Affine, SWCurveConfig};
use ark_ec::CurveConfig;
use ark_ff::{BigInteger, PrimeField};
use rayon::prelude::*;

/// Scalars in the form [`msm`](crate::msm::pippenger::msm) takes: standard-form integers of
/// the curve's scalar field.
pub type BigIntOf<P> = <<P as CurveConfig>::ScalarField as PrimeField>::BigInt;

/// How one MSM is cut into work: window width and point groups per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsmPlan {
    /// Window width c in bits (2..=[`MAX_WINDOW_BITS`]); digits lie in [−2^{c−1}, 2^{c−1}],
    /// so 2^{c−1} buckets.
    pub window_bits: usize,
    /// Each window's points are split into this many groups, each its own parallel task
    /// with its own buckets (more parallelism, more bucket reductions).
    pub groups: usize,
    /// Points per sorting pass; buckets carry over from one pass to the next.
    pub chunk: usize,
}

/// Widest window: 2^19 buckets per task (about 38 MiB of BLS12-381 G2 points).
pub const MAX_WINDOW_BITS: usize = 20;

/// The planner's bound on one task's buckets (2^{c−1} affine points): c ≤ 16 for every
/// group here, c ≤ 17 for G1.
const MAX_BUCKET_BYTES: usize = 8 << 20;

/// Relative cost of reducing one bucket (two projective additions) against accumulating
/// one point (one batch-affine addition plus sorting); measured, see
/// lab/experiments/005-batch-affine-msm.md.
const REDUCE_COST: f64 = 1.5;

impl MsmPlan {
    /// The plan with the least modelled time for `n` points of curve `P`, scalars of `bits`
    /// bits and `threads` workers.
    pub fn choose<P: SWCurveConfig>(n: usize, bits: usize, threads: usize) -> Self {
        let threads = threads.max(1);
        let chunk = chunk_len::<P>();
        let mut best = (
            f64::INFINITY,
            MsmPlan {
                window_bits: 2,
                groups: 1,
                chunk,
            },
        );
        for c in 2..=MAX_WINDOW_BITS {
            // Each task holds its buckets twice during the reduction: bound the memory.
            if c > 2 && (1usize << (c - 1)) * std::mem::size_of::<Affine<P>>() > MAX_BUCKET_BYTES {
                break;
            }
            let windows = (bits + 1).div_ceil(c);
            // Groups beyond ⌈threads / windows⌉ pay too: at 2^16 on 16 threads, c = 11
            // with two groups (48 tasks, three even rounds) beat c = 16 with one
            // (lab/experiments/027-cpu-vs-rapidsnark.md, msmplan: 26 against 32–34 ms).
            for groups in 1..=threads {
                let tasks = windows * groups;
                let rounds = tasks.div_ceil(threads) as f64;
                let per_task = n.div_ceil(groups) as f64 + (1u64 << (c - 1)) as f64 * REDUCE_COST;
                let t = rounds * per_task;
                if t < best.0 {
                    best = (
                        t,
                        MsmPlan {
                            window_bits: c,
                            groups,
                            chunk,
                        },
                    );
                }
            }
        }
        best.1
    }
}

/// The largest bit length among the scalars.
pub(super) fn max_bits<B: BigInteger>(scalars: &[B]) -> usize {
    scalars
        .par_iter()
        .map(|s| s.num_bits() as usize)
        .max()
        .unwrap_or(0)
}

/// `len` (≤ 32) bits of `limbs` starting at bit `lo`; bits past the end read as zero.
#[inline]
fn bits_at(limbs: &[u64], lo: usize, len: usize) -> u64 {
    let (i, sh) = (lo / 64, lo % 64);
    let Some(&first) = limbs.get(i) else {
        return 0;
    };
    let mut v = first >> sh;
    if sh + len > 64 {
        if let Some(&next) = limbs.get(i + 1) {
            v |= next << (64 - sh);
        }
    }
    v & ((1u64 << len) - 1)
}

/// The signed digit of window `w`: s = Σ_w d_w·2^{cw} with d_w ∈ [−2^{c−1}, 2^{c−1}].
///
/// The carry into window w is bit cw − 1 of s, so each digit is computed on its own:
/// d_w = bits[cw, cw + c) + bit(cw − 1) − 2^c·bit(cw + c − 1).
#[inline]
pub(super) fn digit(limbs: &[u64], w: usize, c: usize) -> i64 {
    let lo = w * c;
    let carry_in = if lo == 0 {
        0
    } else {
        bits_at(limbs, lo - 1, 1)
    };
    let carry_out = bits_at(limbs, lo + c - 1, 1);
    (bits_at(limbs, lo, c) + carry_in) as i64 - ((carry_out as i64) << c)
}

/// Points per sorting pass: about 1.1 MiB of affine points, so the runs being summed stay
/// in a core's L2 (measured best among 2^13..2^16 for BN254 G1 on a 2 MiB-L2 Xeon); buckets
/// carry over from one pass to the next.
pub(crate) fn chunk_len<P: SWCurveConfig>() -> usize {
    (((1 << 20) + (1 << 17)) / std::mem::size_of::<Affine<P>>()).max(4096)
}

/// How the CPU's MSMs run. The default: value-dependent shortcuts on, IFMA lanes where
/// the CPU has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsmOptions {
    /// Every scalar treated as full-width: zero scalars kept, every window run, zero digits
    /// added into a discarded bucket, so the work does not follow the values (what a key
    /// bound with [`crate::device::BindOptions::constant_work`] runs on masked scalars).
    pub constant_work: bool,
    /// Pair additions in AVX-512 IFMA lanes where the CPU has them (about twice as fast,
    /// lab/experiments/012-ifma-msm.md); off, arkworks' affine arithmetic everywhere.
    pub ifma: bool,
}

impl Default for MsmOptions {
    fn default() -> Self {
        Self {
            constant_work: false,
            ifma: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::UniformRand;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn digits_recompose() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for c in 2..=17 {
            for _ in 0..50 {
                let s = ark_bn254::Fr::rand(&mut rng).into_bigint();
                let windows = (s.num_bits() as usize + 1).div_ceil(c);
                let mut acc = num_bigint::BigInt::from(0);
                for w in (0..windows).rev() {
                    let d = digit(s.as_ref(), w, c);
                    assert!(d.unsigned_abs() <= 1 << (c - 1));
                    acc = (acc << c) + d;
                }
                assert_eq!(acc, num_bigint::BigInt::from(num_bigint::BigUint::from(s)));
            }
        }
    }

    /// On 16 threads a 2^16 MSM splits each window's points in two
    /// (c = 11), while a 2^20 one keeps one group of c = 16.
    #[test]
    fn small_msms_split_windows_on_many_threads() {
        let p = MsmPlan::choose::<ark_bn254::g1::Config>(1 << 16, 254, 16);
        assert_eq!((p.window_bits, p.groups), (11, 2));
        let q = MsmPlan::choose::<ark_bn254::g1::Config>(1 << 20, 254, 16);
        assert_eq!((q.window_bits, q.groups), (16, 1));
    }

    #[test]
    fn plan_is_sane() {
        for threads in [1, 2, 16, 64] {
            for n in [0, 1, 100, 1 << 16, 1 << 20] {
                let p = MsmPlan::choose::<ark_bn254::g1::Config>(n, 254, threads);
                assert!((2..=MAX_WINDOW_BITS).contains(&p.window_bits), "{p:?}");
                assert!(p.groups >= 1 && p.groups <= threads.max(1), "{p:?}");
                let q = MsmPlan::choose::<ark_bls12_381::g2::Config>(n, 255, threads);
                let bucket_bytes = (1usize << (q.window_bits - 1))
                    * std::mem::size_of::<Affine<ark_bls12_381::g2::Config>>();
                assert!(bucket_bytes <= MAX_BUCKET_BYTES, "{q:?}");
            }
        }
    }
}
