//! Batched subgroup membership: is every point of a key in the prime-order subgroup?
//!
//! Checking each point costs a 64–128-bit scalar multiplication (arkworks' endomorphism
//! tests), which made validation most of a CLI proof's time. Instead we check random
//! subset sums Q_t = Σ e_{t,i}·Pᵢ with independent uniform bits e_{t,i} ∈ {0, 1}.
//!
//! **Soundness.** Write Pᵢ = Gᵢ + Tᵢ with Gᵢ in the subgroup and Tᵢ in the cofactor part
//! (the group order has r once, so the split is unique). Q_t is in the subgroup iff
//! Σ e_{t,i}·Tᵢ = 0. If some Tⱼ ≠ 0, fix every bit but e_{t,j}: the two values of e_{t,j}
//! give sums that differ by Tⱼ, so at most one of them is 0, and trial t passes with
//! probability ≤ 1/2 whatever the cofactor. [`TRIALS`] = 64 independent trials: a bad
//! point survives with probability ≤ 2⁻⁶⁴. (8-bit weights would need up to 41 trials
//! for BLS12-381 G1, whose cofactor has a factor 3;
//! lab/experiments/002-batched-subgroup-checks.md.)
//!
//! **Cost.** k trials share one pass (Pippenger's trick, applied to the trials): each point
//! draws a random k-bit vector v and goes into bucket v (N batch-affine additions for k
//! trials), then Q_t = Σ_{v: bit t of v set} B_v for every t by folding the 2^k buckets
//! (about 2·2^k projective additions). k is chosen to balance the two; 64 trials cost 6–8
//! passes over the points instead of 41. Each point is converted into the MSM's adder form
//! once for all passes, a sorting pass's worth at a time. Each Q_t is then checked exactly.
//! (Written here because arkworks' MSM always walks all 255 scalar bits and has no
//! shared-bucket multi-sum.)

use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ec::{AdditiveGroup, CurveGroup};
use rand::RngCore;
use rayon::prelude::*;

/// Independent subset-sum trials; a bad point passes all of them with probability ≤ 2^-64.
pub const TRIALS: usize = 64;

/// The widest block of trials sharing one pass (2^16 buckets).
const MAX_BLOCK_BITS: usize = 16;

/// True when the cofactor is 1, so every on-curve point is in the subgroup.
fn cofactor_is_one<C: SWCurveConfig>() -> bool {
    C::COFACTOR[0] == 1 && C::COFACTOR.iter().skip(1).all(|&l| l == 0)
}

/// Relative cost of one projective addition in the merge and fold of buckets against one
/// accumulated point (a batch-affine addition, in IFMA lanes where the CPU has them).
const FOLD_COST: usize = 4;

/// Trials per pass over `n` points split into `groups` parallel parts: the k minimizing
/// ⌈64/k⌉ · (n + FOLD_COST·(groups + 4)·2^k), i.e. passes times (accumulating additions +
/// merging the groups' buckets and folding them).
pub fn block_bits(n: usize, groups: usize) -> usize {
    (1..=MAX_BLOCK_BITS)
        .min_by_key(|&k| TRIALS.div_ceil(k) * (n + FOLD_COST * (groups + 4) * (1usize << k)))
        .unwrap_or(1)
}

/// For each block (codes, k): Q_t = Σ_{i: bit t of codesᵢ} Pᵢ for t < k.
fn block_subset_sums<C: SWCurveConfig>(
    points: &[Affine<C>],
    blocks: &[(&[u16], usize)],
) -> Vec<Vec<Projective<C>>> {
    let groups = rayon::current_num_threads().clamp(1, points.len().max(1));
    let nbs: Vec<usize> = blocks.iter().map(|&(_, k)| (1usize << k) - 1).collect();
    // Bucket v − 1 holds the points with code v ≠ 0, per group of points and block.
    let per_group = crate::msm::pippenger::grouped_bucket_sums(points, groups, &nbs, |b, i| {
        blocks[b].0[i] as i64
    });
    blocks
        .iter()
        .enumerate()
        .map(|(b, &(_, k))| fold(&per_group, b, k))
        .collect()
}

/// Q_t for t < k from block b's 2^k − 1 buckets in each group (bucket v − 1 = the points
/// coded v), `per_group` indexed [group][block][bucket].
fn fold<C: SWCurveConfig>(
    per_group: &[Vec<Vec<Affine<C>>>],
    b: usize,
    k: usize,
) -> Vec<Projective<C>> {
    let nb = (1usize << k) - 1;
    let mut sums: Vec<Projective<C>> = (0..=nb)
        .into_par_iter()
        .map(|v| {
            let mut s = Projective::<C>::ZERO;
            if v > 0 {
                for g in per_group {
                    s += g[b][v - 1];
                }
            }
            s
        })
        .collect();
    // Fold the top bit away each round: Q_t sums the upper half, then the upper half is
    // added onto the lower one, so index v then holds the sum over all higher bits.
    let mut out = vec![Projective::<C>::ZERO; k];
    for t in (0..k).rev() {
        let half = 1usize << t;
        let (lo, hi) = sums.split_at_mut(half);
        out[t] = hi[..half].par_iter().copied().sum();
        lo.par_iter_mut()
            .zip(hi[..half].par_iter())
            .for_each(|(l, h)| *l += h);
        sums.truncate(half);
    }
    out
}

/// Q_t = Σ_{i: bit t of codesᵢ} Pᵢ for t < `k`.
#[cfg(test)]
fn subset_sums<C: SWCurveConfig>(
    points: &[Affine<C>],
    codes: &[u16],
    k: usize,
) -> Vec<Projective<C>> {
    block_subset_sums(points, &[(codes, k)]).remove(0)
}

/// True if all `points` (already known to be on the curve) are in the prime-order
/// subgroup, except with probability ≤ 2⁻⁶⁴ over `rng`.
pub fn all_in_subgroup<C: SWCurveConfig>(
    points: &[Affine<C>],
    rng: &mut (impl RngCore + ?Sized),
) -> bool {
    if cofactor_is_one::<C>() || points.is_empty() {
        return true;
    }
    // All blocks' codes first, so each point is converted once for all passes.
    let k = block_bits(points.len(), rayon::current_num_threads());
    let mut bytes = vec![0u8; 2 * points.len()];
    let mut blocks: Vec<(Vec<u16>, usize)> = Vec::new();
    let mut done = 0;
    while done < TRIALS {
        let bits = k.min(TRIALS - done);
        rng.fill_bytes(&mut bytes);
        let mask = ((1u32 << bits) - 1) as u16;
        let codes = bytes
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) & mask)
            .collect();
        blocks.push((codes, bits));
        done += bits;
    }
    let blocks: Vec<(&[u16], usize)> = blocks.iter().map(|(c, k)| (c.as_slice(), *k)).collect();
    let sums = block_subset_sums(points, &blocks);
    sums.iter().all(|block| {
        Projective::normalize_batch(block)
            .iter()
            .all(|q| q.is_in_correct_subgroup_assuming_on_curve())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{One, Zero};
    use ark_std::UniformRand;

    #[test]
    fn trial_blocks() {
        // BN254 G1 has cofactor 1: nothing to check.
        assert!(cofactor_is_one::<ark_bn254::g1::Config>());
        assert!(!cofactor_is_one::<ark_bn254::g2::Config>());
        assert!(!cofactor_is_one::<ark_bls12_381::g1::Config>());
        assert!(!cofactor_is_one::<ark_bls12_381::g2::Config>());
        assert_eq!(TRIALS, 64, "soundness 2^-64 needs 64 trials of error 1/2");
        // The 2^16 bench keys on 2 threads: 250k BLS12-381 G1 points → 11 trials per
        // pass, 6 passes; 65k G2 points → 8 per pass, 8 passes.
        assert_eq!(block_bits(250_000, 2), 11);
        assert_eq!(block_bits(65_536, 2), 8);
        for n in [1, 2, 10, 1000, 1 << 20, 1 << 24] {
            for g in [1, 2, 16] {
                let k = block_bits(n, g);
                assert!((1..=MAX_BLOCK_BITS).contains(&k), "n {n} groups {g}: k {k}");
            }
        }
    }

    /// A random k-bit code per point.
    fn random_codes(n: usize, k: usize, rng: &mut impl RngCore) -> Vec<u16> {
        (0..n)
            .map(|_| (rng.next_u32() as u16) & ((1 << k) - 1))
            .collect()
    }

    /// Checks `got` = [Q_0, …, Q_{k−1}] against Q_t = Σ_{i: bit t of codesᵢ} Pᵢ.
    fn assert_subset_sums<C: SWCurveConfig>(
        got: &[Projective<C>],
        points: &[Affine<C>],
        codes: &[u16],
        k: usize,
        what: &str,
    ) {
        assert_eq!(got.len(), k, "{what}");
        for (t, got) in got.iter().enumerate() {
            let want: Projective<C> = points
                .iter()
                .zip(codes)
                .filter(|(_, &c)| c >> t & 1 == 1)
                .map(|(p, _)| *p)
                .sum();
            assert_eq!(*got, want, "{what} t {t}");
        }
    }

    /// Subset sums against the definition, for ragged group splits and every k.
    #[test]
    fn subset_sums_match_definition() {
        type C = ark_bls12_381::g1::Config;
        let rng = &mut ark_std::test_rng();
        for n in [1usize, 2, 7, 300] {
            let points: Vec<Affine<C>> = (0..n)
                .map(|_| Projective::<C>::rand(rng).into_affine())
                .collect();
            for k in [1, 3, 8] {
                let codes = random_codes(n, k, rng);
                let got = subset_sums(&points, &codes, k);
                assert_subset_sums(&got, &points, &codes, k, &format!("n {n} k {k}"));
            }
            // Several blocks in one call (one conversion) match the blocks one by one.
            let codes = [random_codes(n, 2, rng), random_codes(n, 5, rng)];
            let together = block_subset_sums(&points, &[(&codes[0], 2), (&codes[1], 5)]);
            assert_eq!(together[0], subset_sums(&points, &codes[0], 2), "n {n}");
            assert_eq!(together[1], subset_sums(&points, &codes[1], 5), "n {n}");
        }
    }

    /// Past one sorting pass (each group converts its points a pass at a time and feeds
    /// every block from it): several blocks still match the definition, and a bad point in
    /// a later pass is still caught.
    #[test]
    fn blocks_over_several_sorting_passes() {
        type C = ark_bls12_381::g1::Config;
        let rng = &mut ark_std::test_rng();
        // Cheap distinct points: a running sum of one random point.
        let n = 3 * crate::msm::pippenger::chunk_len::<C>() + 123;
        let step = Projective::<C>::rand(rng);
        let mut acc = Projective::<C>::rand(rng);
        let proj: Vec<Projective<C>> = (0..n)
            .map(|_| {
                acc += step;
                acc
            })
            .collect();
        let points = Projective::normalize_batch(&proj);
        let codes = [random_codes(n, 3, rng), random_codes(n, 6, rng)];
        let got = block_subset_sums(&points, &[(&codes[0], 3), (&codes[1], 6)]);
        for (b, k) in [(0, 3), (1, 6)] {
            assert_subset_sums(&got[b], &points, &codes[b], k, &format!("block {b}"));
        }
        let mut bad = points;
        bad[n - 5] = with_order_3_component();
        assert!(!all_in_subgroup(&bad, rng));
    }

    fn off_subgroup<C: SWCurveConfig>() -> Affine<C> {
        let mut x = C::BaseField::one();
        loop {
            if let Some(p) = Affine::<C>::get_point_from_x_unchecked(x, false) {
                if !p.is_in_correct_subgroup_assuming_on_curve() {
                    return p;
                }
            }
            x += C::BaseField::one();
        }
    }

    fn detects_one_bad_point<C: SWCurveConfig>() {
        let rng = &mut ark_std::test_rng();
        let mut points: Vec<Affine<C>> = (0..1000)
            .map(|_| Projective::<C>::rand(rng).into_affine())
            .collect();
        points[17] = Affine::identity();
        assert!(all_in_subgroup(&points, rng));
        let bad = off_subgroup::<C>();
        for at in [0, 567, 999] {
            let mut with_bad = points.clone();
            with_bad[at] = bad;
            assert!(
                !all_in_subgroup(&with_bad, rng),
                "bad point at {at} undetected"
            );
        }
    }

    /// BLS12-381 G1's hard case: a component of order 3, (0, 2) on y² = x³ + 4.
    fn with_order_3_component() -> Affine<ark_bls12_381::g1::Config> {
        type C = ark_bls12_381::g1::Config;
        let two = <C as ark_ec::CurveConfig>::BaseField::from(2u64);
        let t3 = Affine::<C>::new_unchecked(Default::default(), two);
        assert!(t3.is_on_curve());
        assert!((Projective::from(t3) * ark_bls12_381::Fr::from(3u64)).is_zero());
        let g = Projective::<C>::rand(&mut ark_std::test_rng());
        let bad = (g + t3).into_affine();
        assert!(!bad.is_in_correct_subgroup_assuming_on_curve());
        bad
    }

    #[test]
    fn order_3_component_and_cancelling_pairs_are_detected() {
        type C = ark_bls12_381::g1::Config;
        let rng = &mut ark_std::test_rng();
        let points: Vec<Affine<C>> = (0..500)
            .map(|_| Projective::<C>::rand(rng).into_affine())
            .collect();
        let bad = with_order_3_component();
        let mut one = points.clone();
        one[250] = bad;
        assert!(!all_in_subgroup(&one, rng));
        // bad and −bad cancel whenever their two bits agree: each trial still catches
        // them with probability 1/2.
        let mut pair = points.clone();
        pair[3] = bad;
        pair[400] = -bad;
        assert!(!all_in_subgroup(&pair, rng));
        // Per trial the error is 1/2, not better: among 64 single trials about half catch it.
        let caught = (0..64)
            .filter(|_| {
                let codes: Vec<u16> = (0..pair.len())
                    .map(|_| (rng.next_u32() & 1) as u16)
                    .collect();
                !subset_sums(&pair, &codes, 1)[0]
                    .into_affine()
                    .is_in_correct_subgroup_assuming_on_curve()
            })
            .count();
        assert!((16..=48).contains(&caught), "caught {caught} of 64");
    }

    #[test]
    fn detects_points_outside_the_subgroup() {
        detects_one_bad_point::<ark_bls12_381::g1::Config>();
        detects_one_bad_point::<ark_bls12_381::g2::Config>();
        detects_one_bad_point::<ark_bn254::g2::Config>();
    }
}
