//! Batched subgroup membership: is every point of a key in the prime-order subgroup?
//!
//! Checking each point costs a 64–128-bit scalar multiplication (arkworks' endomorphism
//! tests), which made validation most of a CLI proof's time. Instead we check random
//! combinations Q = Σ rᵢ·Pᵢ with rᵢ uniform in [0, 2⁸): if some Pⱼ has a component T ≠ 0
//! outside the subgroup, Q escapes detection only if rⱼ hits one residue class modulo
//! ord(T), so with probability at most ε = ⌈2⁸/ℓ⌉/2⁸, ℓ the smallest prime dividing the
//! cofactor. Independent trials repeat until εᴷ ≤ 2⁻⁶⁴. Each trial is one bucket pass
//! (N additions + 510), several times cheaper than N scalar multiplications.
//! (Written here because arkworks' MSM always walks all 255 scalar bits.)

use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ec::{AdditiveGroup, CurveGroup};
use rand::RngCore;
use rayon::prelude::*;

/// Bits of each random weight.
const WEIGHT_BITS: u32 = 8;
/// Soundness target: a bad point passes with probability at most 2^-SECURITY_BITS.
const SECURITY_BITS: f64 = 64.0;

/// The smallest prime below 2^WEIGHT_BITS dividing the curve's cofactor, if any, and
/// whether the cofactor is 1 (then every on-curve point is in the subgroup).
fn smallest_small_prime_factor(cofactor: &[u64]) -> Option<u64> {
    (2u64..1 << WEIGHT_BITS).find(|&p| is_prime(p) && rem(cofactor, p) == 0)
}

fn is_prime(p: u64) -> bool {
    p >= 2
        && (2..p)
            .take_while(|d| d * d <= p)
            .all(|d| !p.is_multiple_of(d))
}

/// A multi-limb little-endian integer modulo a small number.
fn rem(limbs: &[u64], m: u64) -> u64 {
    limbs
        .iter()
        .rev()
        .fold(0u128, |acc, &l| ((acc << 64) | l as u128) % m as u128) as u64
}

/// Trials needed so that a bad point survives all of them with probability ≤ 2⁻⁶⁴;
/// 0 when the cofactor is 1.
pub fn trials<C: SWCurveConfig>() -> u32 {
    if C::COFACTOR.iter().skip(1).all(|&l| l == 0) && C::COFACTOR[0] == 1 {
        return 0;
    }
    let span = 1u64 << WEIGHT_BITS;
    let eps = match smallest_small_prime_factor(C::COFACTOR) {
        Some(l) => span.div_ceil(l) as f64 / span as f64,
        None => 1.0 / span as f64,
    };
    (SECURITY_BITS / -eps.log2()).ceil() as u32
}

/// Σ rᵢ·Pᵢ with byte weights, by one pass into 255 buckets per chunk of points.
fn random_combination<C: SWCurveConfig>(points: &[Affine<C>], weights: &[u8]) -> Projective<C> {
    points
        .par_chunks(4096)
        .zip(weights.par_chunks(4096))
        .map(|(ps, ws)| {
            let mut buckets = [Projective::<C>::ZERO; (1 << WEIGHT_BITS) - 1];
            for (p, &w) in ps.iter().zip(ws) {
                if w != 0 {
                    buckets[w as usize - 1] += p;
                }
            }
            // Σ k·B_k as a running sum from the top bucket down.
            let (mut running, mut sum) = (Projective::<C>::ZERO, Projective::<C>::ZERO);
            for b in buckets.iter().rev() {
                running += b;
                sum += running;
            }
            sum
        })
        .reduce(|| Projective::<C>::ZERO, |a, b| a + b)
}

/// True if all `points` (already known to be on the curve) are in the prime-order
/// subgroup, except with probability ≤ 2⁻⁶⁴ over `rng`.
pub fn all_in_subgroup<C: SWCurveConfig>(
    points: &[Affine<C>],
    rng: &mut (impl RngCore + ?Sized),
) -> bool {
    let mut weights = vec![0u8; points.len()];
    (0..trials::<C>()).all(|_| {
        rng.fill_bytes(&mut weights);
        random_combination(points, &weights)
            .into_affine()
            .is_in_correct_subgroup_assuming_on_curve()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::CurveConfig;
    use ark_ff::One;
    use ark_std::UniformRand;

    #[test]
    fn cofactor_primes_and_trial_counts() {
        // BN254 G1 has cofactor 1: nothing to check.
        assert_eq!(trials::<ark_bn254::g1::Config>(), 0);
        // BLS12-381 G1's cofactor is divisible by 3: ε = 86/256, 41 trials.
        assert_eq!(
            smallest_small_prime_factor(ark_bls12_381::g1::Config::COFACTOR),
            Some(3)
        );
        assert_eq!(trials::<ark_bls12_381::g1::Config>(), 41);
        // BLS12-381 G2's smallest prime is 13: ε = 20/256, 18 trials.
        assert_eq!(
            smallest_small_prime_factor(ark_bls12_381::g2::Config::COFACTOR),
            Some(13)
        );
        assert_eq!(trials::<ark_bls12_381::g2::Config>(), 18);
        // BN254 G2's cofactor has no prime factor below 256: ε = 1/256, 8 trials.
        assert_eq!(
            smallest_small_prime_factor(ark_bn254::g2::Config::COFACTOR),
            None
        );
        assert_eq!(trials::<ark_bn254::g2::Config>(), 8);
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

    #[test]
    fn detects_points_outside_the_subgroup() {
        detects_one_bad_point::<ark_bls12_381::g1::Config>();
        detects_one_bad_point::<ark_bls12_381::g2::Config>();
        detects_one_bad_point::<ark_bn254::g2::Config>();
    }
}
