//! What a curve must provide beyond arkworks' pairing: snarkjs's byte layout of points
//! (Montgomery limbs, zero bytes for infinity), point validation, and its JSON numbers.
//!
//! Everything above this module is generic over [`Curve`]; the two implementations differ
//! only in the arkworks types they name, so one macro writes both.

use crate::error::PointError;
use crate::msm::pippenger::BatchAffineMsm;
use ark_ec::pairing::{Pairing, PairingOutput};
use ark_ec::AdditiveGroup;
use ark_ec::AffineRepr;
use ark_ff::{BigInt, BigInteger, Field, Fp, MontBackend, MontConfig, PrimeField};
use num_bigint::BigUint;
use zkpipe_formats::CurveId;

/// A pairing-friendly curve in snarkjs's conventions (both groups short Weierstrass, so
/// the CPU backend's batch-affine MSM serves them).
pub trait Curve:
    Pairing<G1Affine: BatchAffineMsm, G2Affine: BatchAffineMsm, ScalarField: MontLimbs>
{
    /// Which curve this is in file headers.
    const ID: CurveId;

    /// Reads an affine G1 point from file bytes (x, y as Montgomery limbs; all zero =
    /// infinity). Checks coordinates are field elements and, if `on_curve`, the equation.
    fn g1_from_bytes(b: &[u8], on_curve: bool) -> Result<Self::G1Affine, PointError>;
    /// Reads an affine G2 point (x.c0, x.c1, y.c0, y.c1).
    fn g2_from_bytes(b: &[u8], on_curve: bool) -> Result<Self::G2Affine, PointError>;
    /// Appends a G1 point in file layout.
    fn g1_to_bytes(p: &Self::G1Affine, out: &mut Vec<u8>);
    /// Appends a G2 point in file layout.
    fn g2_to_bytes(p: &Self::G2Affine, out: &mut Vec<u8>);
    /// A G1 point from affine coordinates, checked to be on the curve.
    fn g1_from_xy(x: Self::BaseField, y: Self::BaseField) -> Result<Self::G1Affine, PointError>;
    /// A G2 point from (x.c0, x.c1, y.c0, y.c1), checked to be on the curve.
    fn g2_from_xy(c: [Self::BaseField; 4]) -> Result<Self::G2Affine, PointError>;
    /// Subgroup membership of a point known to be on the curve.
    fn g1_in_subgroup(p: &Self::G1Affine) -> bool;
    /// Subgroup membership of a G2 point known to be on the curve.
    fn g2_in_subgroup(p: &Self::G2Affine) -> bool;
    /// Subgroup membership of many on-curve G1 points at once (randomized, error ≤ 2⁻⁶⁴).
    fn g1_all_in_subgroup(points: &[Self::G1Affine], rng: &mut dyn rand::RngCore) -> bool;
    /// Subgroup membership of many on-curve G2 points at once (randomized, error ≤ 2⁻⁶⁴).
    fn g2_all_in_subgroup(points: &[Self::G2Affine], rng: &mut dyn rand::RngCore) -> bool;
}

/// A field whose elements are stored as arkworks stores both scalar fields here: four
/// 64-bit limbs of a·2^256 mod p. The IFMA lanes read and write those limbs as they are.
pub trait MontLimbs: PrimeField {
    /// The stored limbs.
    fn mont_limbs(&self) -> [u64; 4];
    /// The element whose stored limbs are `limbs` (which must be below p).
    fn from_mont_limbs(limbs: [u64; 4]) -> Self;
}

impl<C: MontConfig<4>> MontLimbs for Fp<MontBackend<C, 4>, 4> {
    fn mont_limbs(&self) -> [u64; 4] {
        (self.0).0
    }

    fn from_mont_limbs(limbs: [u64; 4]) -> Self {
        Fp::new_unchecked(BigInt(limbs))
    }
}

/// A base-field element from its Montgomery limbs, if below the modulus.
fn fp_from_mont<C: MontConfig<N>, const N: usize>(b: &[u8]) -> Option<Fp<MontBackend<C, N>, N>> {
    let mut limbs = [0u64; N];
    for (limb, chunk) in limbs.iter_mut().zip(b.chunks_exact(8)) {
        let mut a = [0u8; 8];
        a.copy_from_slice(chunk);
        *limb = u64::from_le_bytes(a);
    }
    let raw = ark_ff::BigInt(limbs);
    (raw < C::MODULUS).then(|| Fp::new_unchecked(raw))
}

fn fp_to_mont<C: MontConfig<N>, const N: usize>(x: &Fp<MontBackend<C, N>, N>, out: &mut Vec<u8>) {
    for limb in x.0 .0 {
        out.extend_from_slice(&limb.to_le_bytes());
    }
}

macro_rules! impl_curve {
    ($engine:ty, $m:ident, $id:expr) => {
        impl Curve for $engine {
            const ID: CurveId = $id;

            fn g1_from_bytes(b: &[u8], on_curve: bool) -> Result<Self::G1Affine, PointError> {
                if b.iter().all(|&x| x == 0) {
                    return Ok($m::G1Affine::identity());
                }
                let n = b.len() / 2;
                let x: $m::Fq = fp_from_mont(&b[..n]).ok_or(PointError::CoordinateOutOfRange)?;
                let y: $m::Fq = fp_from_mont(&b[n..]).ok_or(PointError::CoordinateOutOfRange)?;
                let p = $m::G1Affine::new_unchecked(x, y);
                if on_curve && !p.is_on_curve() {
                    return Err(PointError::NotOnCurve);
                }
                Ok(p)
            }

            fn g2_from_bytes(b: &[u8], on_curve: bool) -> Result<Self::G2Affine, PointError> {
                if b.iter().all(|&x| x == 0) {
                    return Ok($m::G2Affine::identity());
                }
                let n = b.len() / 4;
                let c = |i: usize| -> Result<$m::Fq, PointError> {
                    fp_from_mont(&b[i * n..(i + 1) * n]).ok_or(PointError::CoordinateOutOfRange)
                };
                let p = $m::G2Affine::new_unchecked(
                    $m::Fq2::new(c(0)?, c(1)?),
                    $m::Fq2::new(c(2)?, c(3)?),
                );
                if on_curve && !p.is_on_curve() {
                    return Err(PointError::NotOnCurve);
                }
                Ok(p)
            }

            fn g1_to_bytes(p: &Self::G1Affine, out: &mut Vec<u8>) {
                match p.xy() {
                    None => out.resize(out.len() + 2 * Self::ID.n8q(), 0),
                    Some((x, y)) => {
                        fp_to_mont(&x, out);
                        fp_to_mont(&y, out);
                    }
                }
            }

            fn g2_to_bytes(p: &Self::G2Affine, out: &mut Vec<u8>) {
                match p.xy() {
                    None => out.resize(out.len() + 4 * Self::ID.n8q(), 0),
                    Some((x, y)) => {
                        for c in [x.c0, x.c1, y.c0, y.c1] {
                            fp_to_mont(&c, out);
                        }
                    }
                }
            }

            fn g1_from_xy(x: $m::Fq, y: $m::Fq) -> Result<Self::G1Affine, PointError> {
                let p = $m::G1Affine::new_unchecked(x, y);
                p.is_on_curve().then_some(p).ok_or(PointError::NotOnCurve)
            }

            fn g2_from_xy(c: [$m::Fq; 4]) -> Result<Self::G2Affine, PointError> {
                let p =
                    $m::G2Affine::new_unchecked($m::Fq2::new(c[0], c[1]), $m::Fq2::new(c[2], c[3]));
                p.is_on_curve().then_some(p).ok_or(PointError::NotOnCurve)
            }

            fn g1_in_subgroup(p: &Self::G1Affine) -> bool {
                p.is_in_correct_subgroup_assuming_on_curve()
            }

            fn g2_in_subgroup(p: &Self::G2Affine) -> bool {
                p.is_in_correct_subgroup_assuming_on_curve()
            }

            fn g1_all_in_subgroup(points: &[Self::G1Affine], rng: &mut dyn rand::RngCore) -> bool {
                crate::subgroup::all_in_subgroup::<$m::g1::Config>(points, rng)
            }

            fn g2_all_in_subgroup(points: &[Self::G2Affine], rng: &mut dyn rand::RngCore) -> bool {
                crate::subgroup::all_in_subgroup::<$m::g2::Config>(points, rng)
            }
        }
    };
}

impl_curve!(ark_bn254::Bn254, ark_bn254, CurveId::Bn254);
impl_curve!(ark_bls12_381::Bls12_381, ark_bls12_381, CurveId::Bls12_381);

/// A prime-field element from a decimal string, rejecting values ≥ the modulus.
pub fn field_from_decimal<F: PrimeField>(s: &str) -> Option<F> {
    if !zkpipe_formats::json::is_decimal(s) {
        return None;
    }
    let n = BigUint::parse_bytes(s.as_bytes(), 10)?;
    F::from_bigint(F::BigInt::try_from(n).ok()?)
}

/// A prime-field element from little-endian standard-form bytes, rejecting values ≥ the modulus.
///
/// 0 and 1 skip `from_bigint`'s Montgomery multiplication: circom witnesses are mostly
/// 0s and 1s, and converting a small proof's witness was ~13% of the daemon's CPU with
/// SHA-256 values (lab/experiments/042j-host-cpu.md).
pub fn field_from_le<F: PrimeField>(b: &[u8]) -> Option<F> {
    let big = bigint_from_le::<F>(b)?;
    let limbs = big.as_ref();
    if limbs[1..].iter().all(|&l| l == 0) {
        match limbs[0] {
            0 => return Some(F::ZERO),
            1 => return Some(F::ONE),
            _ => {}
        }
    }
    F::from_bigint(big)
}

/// The integer of little-endian bytes, as `F`'s big integer type (`None` if too long for
/// it; not reduced or range-checked).
pub(crate) fn bigint_from_le<F: PrimeField>(b: &[u8]) -> Option<F::BigInt> {
    let mut big = F::BigInt::default();
    let limbs = big.as_mut();
    if b.len() > limbs.len() * 8 {
        return None;
    }
    for (i, chunk) in b.chunks(8).enumerate() {
        let mut a = [0u8; 8];
        a[..chunk.len()].copy_from_slice(chunk);
        limbs[i] = u64::from_le_bytes(a);
    }
    Some(big)
}

/// Little-endian standard-form bytes of a prime-field element.
pub fn field_to_le<F: PrimeField>(x: &F) -> Vec<u8> {
    x.into_bigint().to_bytes_le()
}

/// Decimal string of a prime-field element.
pub fn field_to_decimal<F: PrimeField>(x: &F) -> String {
    x.into_bigint().to_string()
}

/// Decimal strings of an extension-field element's base-prime-field coordinates.
fn coords_to_decimal<F: Field>(f: &F) -> Vec<String> {
    f.to_base_prime_field_elements()
        .map(|e| e.into_bigint().to_string())
        .collect()
}

/// The G1 point as snarkjs writes it in JSON.
pub fn g1_to_json<E: Curve>(p: &E::G1Affine) -> Vec<String> {
    match p.xy() {
        None => vec!["0".into(), "1".into(), "0".into()],
        Some((x, y)) => {
            let mut v = coords_to_decimal(&x);
            v.extend(coords_to_decimal(&y));
            v.push("1".into());
            v
        }
    }
}

/// The G2 point as snarkjs writes it in JSON.
pub fn g2_to_json<E: Curve>(p: &E::G2Affine) -> Vec<Vec<String>> {
    let s = coords_to_decimal::<<E::G2Affine as AffineRepr>::BaseField>;
    match p.xy() {
        None => vec![
            vec!["0".into(), "0".into()],
            vec!["1".into(), "0".into()],
            vec!["0".into(), "0".into()],
        ],
        Some((x, y)) => vec![s(&x), s(&y), vec!["1".into(), "0".into()]],
    }
}

/// A GT element in snarkjs's nesting: [c0, c1] of Fq6, each [c0, c1, c2] of Fq2.
pub fn gt_to_json<E: Pairing>(t: &PairingOutput<E>) -> Vec<Vec<Vec<String>>> {
    let flat = coords_to_decimal(&t.0);
    flat.chunks(6)
        .map(|fq6| fq6.chunks(2).map(<[String]>::to_vec).collect())
        .collect()
}

fn base_from_json<E: Curve>(s: &str) -> Result<E::BaseField, PointError> {
    field_from_decimal::<E::BaseField>(s).ok_or(if zkpipe_formats::json::is_decimal(s) {
        PointError::CoordinateOutOfRange
    } else {
        PointError::Malformed
    })
}

/// Parses a JSON G1 point: `[x, y, "1"]`, or `[_, _, "0"]` for infinity. On the curve and
/// in the subgroup, or an error.
pub fn g1_from_json<E: Curve>(v: &[String]) -> Result<E::G1Affine, PointError> {
    let [x, y, z] = v else {
        return Err(PointError::Malformed);
    };
    match z.as_str() {
        "0" => Ok(E::G1Affine::zero()),
        "1" => {
            let p = E::g1_from_xy(base_from_json::<E>(x)?, base_from_json::<E>(y)?)?;
            if E::g1_in_subgroup(&p) {
                Ok(p)
            } else {
                Err(PointError::NotInSubgroup)
            }
        }
        _ => Err(PointError::Malformed),
    }
}

/// Parses a JSON G2 point: `[[x0, x1], [y0, y1], ["1", "0"]]` (or z = 0 for infinity).
pub fn g2_from_json<E: Curve>(v: &[Vec<String>]) -> Result<E::G2Affine, PointError> {
    let [x, y, z] = v else {
        return Err(PointError::Malformed);
    };
    let pair = |c: &Vec<String>| -> Result<[E::BaseField; 2], PointError> {
        match c.as_slice() {
            [a, b] => Ok([base_from_json::<E>(a)?, base_from_json::<E>(b)?]),
            _ => Err(PointError::Malformed),
        }
    };
    let z = pair(z)?;
    if z[1] != E::BaseField::ZERO {
        return Err(PointError::Malformed);
    }
    if z[0] == E::BaseField::ZERO {
        return Ok(E::G2Affine::zero());
    }
    if z[0] != E::BaseField::ONE {
        return Err(PointError::Malformed);
    }
    let (x, y) = (pair(x)?, pair(y)?);
    let p = E::g2_from_xy([x[0], x[1], y[0], y[1]])?;
    if E::g2_in_subgroup(&p) {
        Ok(p)
    } else {
        Err(PointError::NotInSubgroup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::CurveGroup;
    use ark_ff::BigInteger;
    use ark_std::UniformRand;

    /// 0 and 1 (taken without a multiplication) and their neighbours read as
    /// `from_bigint` gives them; the modulus is refused.
    fn small_values_read_as_from_bigint<F: PrimeField>() {
        let le = |x: &F::BigInt| x.to_bytes_le();
        let mut p_minus_1 = F::MODULUS;
        p_minus_1.sub_with_borrow(&F::BigInt::from(1u64));
        let mut one_high = F::BigInt::from(1u64);
        one_high.as_mut()[1] = 1;
        let values = [0u64, 1, 2, 3, u64::MAX].map(F::BigInt::from);
        for x in values.into_iter().chain([p_minus_1, one_high]) {
            let read = field_from_le::<F>(&le(&x));
            assert!(read.is_some(), "{x}");
            assert_eq!(read, F::from_bigint(x), "{x}");
        }
        assert_eq!(field_from_le::<F>(&[0; 32]), Some(F::ZERO));
        assert_eq!(field_from_le::<F>(&[1]), Some(F::ONE));
        assert_eq!(field_from_le::<F>(&le(&F::MODULUS)), None);
    }

    #[test]
    fn small_values_read_as_from_bigint_on_both_curves() {
        small_values_read_as_from_bigint::<ark_bn254::Fr>();
        small_values_read_as_from_bigint::<ark_bls12_381::Fr>();
    }

    fn round_trips<E: Curve>() {
        let rng = &mut ark_std::test_rng();
        let g1 = E::G1::rand(rng).into_affine();
        let g2 = E::G2::rand(rng).into_affine();
        let mut b = Vec::new();
        E::g1_to_bytes(&g1, &mut b);
        assert_eq!(b.len(), E::ID.g1_bytes());
        assert_eq!(E::g1_from_bytes(&b, true).unwrap(), g1);
        b.clear();
        E::g2_to_bytes(&g2, &mut b);
        assert_eq!(b.len(), E::ID.g2_bytes());
        assert_eq!(E::g2_from_bytes(&b, true).unwrap(), g2);
        assert_eq!(g1_from_json::<E>(&g1_to_json::<E>(&g1)).unwrap(), g1);
        assert_eq!(g2_from_json::<E>(&g2_to_json::<E>(&g2)).unwrap(), g2);
        let zero = vec![0u8; E::ID.g1_bytes()];
        assert!(E::g1_from_bytes(&zero, true).unwrap().is_zero());
        // A point off the curve is rejected.
        let mut off = g1_to_json::<E>(&g1);
        off[1] = "5".into();
        assert!(g1_from_json::<E>(&off).is_err());
        // Coordinates ≥ q are rejected.
        let q: BigUint = E::BaseField::MODULUS.into();
        let mut big = g1_to_json::<E>(&g1);
        big[0] = q.to_string();
        assert_eq!(
            g1_from_json::<E>(&big),
            Err(PointError::CoordinateOutOfRange)
        );
        big[0] = "0x1".into();
        assert_eq!(g1_from_json::<E>(&big), Err(PointError::Malformed));
    }

    #[test]
    fn bn254_points_round_trip() {
        round_trips::<ark_bn254::Bn254>();
    }

    #[test]
    fn bls12_381_points_round_trip() {
        round_trips::<ark_bls12_381::Bls12_381>();
    }

    #[test]
    fn moduli_agree_with_formats_crate() {
        fn check<E: Curve>() {
            let q = field_to_le_big(E::BaseField::MODULUS);
            let r = field_to_le_big(E::ScalarField::MODULUS);
            assert_eq!(q, E::ID.q_le());
            assert_eq!(r, E::ID.r_le());
        }
        fn field_to_le_big<B: BigInteger>(b: B) -> Vec<u8> {
            b.to_bytes_le()
        }
        check::<ark_bn254::Bn254>();
        check::<ark_bls12_381::Bls12_381>();
    }
}
