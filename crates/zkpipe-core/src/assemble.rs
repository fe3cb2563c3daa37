//! Step 4, assemble: add the key's α, β, δ terms with fresh randomness r, s, exactly as
//! snarkjs does:
//!
//! ```text
//! π_A  = α₁ + [A]₁ + r·δ₁          π_B = β₂ + [B]₂ + s·δ₂
//! π_B₁ = β₁ + [B]₁ + s·δ₁          (the G1 twin of π_B, only used for π_C)
//! π_C  = [C]₁ + [H]₁ + s·π_A + r·π_B₁ − r·s·δ₁
//! ```

use crate::blinding::BlindingBases;
use crate::curve::Curve;
use crate::key::CompiledKey;
use crate::msm::MsmResults;
use crate::proof::Proof;
use ark_ec::{AffineRepr, CurveGroup};

/// The proof from the MSM results and blinding factors r, s.
///
/// With the key's blinding tables ([`CompiledKey::prepare_resident`]) π_C is taken apart
/// so that all but two multiplications have a fixed base:
///
/// ```text
/// π_C = [C]₁ + [H]₁ + s·α₁ + r·β₁ + r·s·δ₁ + s·[A]₁ + r·[B]₁
/// ```
///
/// (s·π_A + r·π_B₁ − r·s·δ₁ expanded), and the fixed-base ones are table lookups. Without
/// them, the six multiplications of the formula above run side by side.
pub fn assemble<E: Curve>(
    key: &CompiledKey<E>,
    m: &MsmResults<E>,
    r: E::ScalarField,
    s: E::ScalarField,
) -> Proof<E> {
    let (pi_a, pi_b, pi_c) = match key.blinding() {
        Some(t) => with_tables(key, t, m, r, s),
        None => plain(key, m, r, s),
    };
    let mut affine = E::G1::normalize_batch(&[pi_a, pi_c]);
    let c = affine.pop().expect("two points");
    let a = affine.pop().expect("two points");
    Proof {
        a,
        b: pi_b.into_affine(),
        c,
    }
}

/// snarkjs's formulas as written: six scalar multiplications, ~0.1 ms each in G1 and
/// ~0.3 ms in G2, side by side on the pool, so a proof's assembly costs two of them, not
/// all.
fn plain<E: Curve>(
    key: &CompiledKey<E>,
    m: &MsmResults<E>,
    r: E::ScalarField,
    s: E::ScalarField,
) -> (E::G1, E::G2, E::G1) {
    let delta1: E::G1 = key.delta_g1.into();
    let ((pi_a, pi_b1, rs_delta), pi_b) = rayon::join(
        || {
            let (r_delta, (s_delta, rs_delta)) = rayon::join(
                || delta1 * r,
                || rayon::join(|| delta1 * s, || delta1 * (r * s)),
            );
            (
                m.a + key.vk.alpha_g1 + r_delta,
                m.b1 + key.beta_g1 + s_delta,
                rs_delta,
            )
        },
        || m.b2 + key.vk.beta_g2 + E::G2::from(key.vk.delta_g2) * s,
    );
    let (s_a, r_b1) = rayon::join(|| pi_a * s, || pi_b1 * r);
    (pi_a, pi_b, m.c + m.h + s_a + r_b1 - rs_delta)
}

/// The expanded π_C: the two variable-base multiplications (s·[A]₁, r·[B]₁) side by side
/// with the five table lookups (tens of microseconds each).
fn with_tables<E: Curve>(
    key: &CompiledKey<E>,
    t: &BlindingBases<E>,
    m: &MsmResults<E>,
    r: E::ScalarField,
    s: E::ScalarField,
) -> (E::G1, E::G2, E::G1) {
    let ((s_a, r_b1), (fixed_g1, s_delta2)) = rayon::join(
        || rayon::join(|| m.a * s, || m.b1 * r),
        || {
            rayon::join(
                || {
                    let rs = r * s;
                    let v = [r, rs, s, r];
                    // r·δ₁, r·s·δ₁ from δ₁'s table; s·α₁ and r·β₁ from theirs.
                    let d = t.delta1.batch_mul(&v[..2]);
                    let a = t.alpha1.batch_mul(&v[2..3]);
                    let b = t.beta1.batch_mul(&v[3..]);
                    (d[0].into_group(), d[1] + a[0] + b[0])
                },
                || t.delta2.batch_mul(&[s])[0].into_group(),
            )
        },
    );
    let (r_delta1, blind_c) = fixed_g1;
    let pi_a = m.a + key.vk.alpha_g1 + r_delta1;
    let pi_b = m.b2 + key.vk.beta_g2 + s_delta2;
    (pi_a, pi_b, m.c + m.h + blind_c + s_a + r_b1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PointChecks;
    use ark_bls12_381::Bls12_381;
    use ark_bn254::Bn254;
    use ark_std::UniformRand;
    use zkpipe_formats::zkey::ZkeyFile;

    /// With the tables, the proof is the same points as snarkjs's formulas give.
    fn tables_give_the_same_proof<E: Curve>(curve: &str) {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(curve)
            .join("multi_public/circuit.zkey");
        let zkey = ZkeyFile::open(path).unwrap();
        let key = CompiledKey::<E>::compile(&zkey, PointChecks::Trusted).unwrap();
        let mut rng = ark_std::test_rng();
        let m = MsmResults::<E> {
            a: E::G1::rand(&mut rng),
            b1: E::G1::rand(&mut rng),
            b2: E::G2::rand(&mut rng),
            c: E::G1::rand(&mut rng),
            h: E::G1::rand(&mut rng),
        };
        let (r, s) = (
            E::ScalarField::rand(&mut rng),
            E::ScalarField::rand(&mut rng),
        );
        let plain = assemble(&key, &m, r, s);
        key.prepare_resident();
        let tabled = assemble(&key, &m, r, s);
        assert_eq!((plain.a, plain.b, plain.c), (tabled.a, tabled.b, tabled.c));
        assert!(!plain.a.is_zero() && !plain.c.is_zero());
    }

    #[test]
    fn blinding_tables_give_the_same_proof_bn254() {
        tables_give_the_same_proof::<Bn254>("bn254");
    }

    #[test]
    fn blinding_tables_give_the_same_proof_bls12_381() {
        tables_give_the_same_proof::<Bls12_381>("bls12-381");
    }
}
