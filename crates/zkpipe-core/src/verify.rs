//! The Groth16 pairing check, and the verification key's snarkjs JSON form.

use crate::curve::{g1_from_json, g1_to_json, g2_from_json, g2_to_json, gt_to_json, Curve};
use crate::error::Error;
use crate::key::VerifyingKey;
pub use crate::prepared_vk::PreparedVerifyingKey;
use crate::prepared_vk::{miller_loops, public_combination, Lines};
use crate::proof::{check_curve_name, Proof};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::One;
use zkpipe_formats::json::VerificationKeyJson;

/// Does `proof` verify for these public signals? Errors only on a public-input count that
/// does not match the key. The four pairs' Miller loops run side by side on the current
/// rayon pool, each computing its G2 lines, then one final exponentiation: what a one-shot
/// check without a [`PreparedVerifyingKey`] costs.
pub fn verify<E: Curve>(
    vk: &VerifyingKey<E>,
    public: &[E::ScalarField],
    proof: &Proof<E>,
) -> Result<bool, Error> {
    let vk_x = public_combination::<E>(&vk.ic, public)?;
    // e(−A, B) · e(vk_x, γ) · e(C, δ) · e(α, β) = 1
    let ml = miller_loops::<E>(&[
        ((-proof.a.into_group()).into_affine(), Lines::Point(proof.b)),
        (vk_x, Lines::Point(vk.gamma_g2)),
        (proof.c, Lines::Point(vk.delta_g2)),
        (vk.alpha_g1, Lines::Point(vk.beta_g2)),
    ]);
    Ok(E::final_exponentiation(ml).is_some_and(|gt| gt.0.is_one()))
}

impl<E: Curve> VerifyingKey<E> {
    /// This key made ready for many checks ([`PreparedVerifyingKey`]).
    pub fn prepare(&self) -> PreparedVerifyingKey<E> {
        PreparedVerifyingKey::new(
            self.alpha_g1,
            self.beta_g2,
            self.gamma_g2,
            self.delta_g2,
            self.ic.clone(),
        )
    }

    /// snarkjs's `verification_key.json`, including e(α, β).
    pub fn to_json(&self) -> VerificationKeyJson {
        let alphabeta = E::pairing(self.alpha_g1, self.beta_g2);
        VerificationKeyJson {
            protocol: "groth16".into(),
            curve: E::ID.snarkjs_name().into(),
            n_public: self.n_public() as u64,
            vk_alpha_1: g1_to_json::<E>(&self.alpha_g1),
            vk_beta_2: g2_to_json::<E>(&self.beta_g2),
            vk_gamma_2: g2_to_json::<E>(&self.gamma_g2),
            vk_delta_2: g2_to_json::<E>(&self.delta_g2),
            vk_alphabeta_12: gt_to_json::<E>(&alphabeta),
            ic: self.ic.iter().map(g1_to_json::<E>).collect(),
        }
    }

    /// Parses `verification_key.json`, checking every point.
    pub fn from_json(j: &VerificationKeyJson) -> Result<Self, Error> {
        if j.protocol != "groth16" {
            return Err(Error::InvalidJson(format!(
                "protocol is {:?}, expected \"groth16\"",
                j.protocol
            )));
        }
        check_curve_name::<E>(&j.curve)?;
        // IC holds one point for the constant 1, then one per public signal. (nPublic is
        // any u64 here: nPublic + 1 would overflow.)
        if j.ic.len().checked_sub(1).map(|n| n as u64) != Some(j.n_public) {
            return Err(Error::InvalidJson(format!(
                "IC has {} points, nPublic = {} needs nPublic + 1",
                j.ic.len(),
                j.n_public,
            )));
        }
        let bad = |what: &str, index: usize| {
            let what = what.to_string();
            move |problem| Error::InvalidPoint {
                what,
                index,
                problem,
            }
        };
        Ok(Self {
            alpha_g1: g1_from_json::<E>(&j.vk_alpha_1).map_err(bad("vk_alpha_1", 0))?,
            beta_g2: g2_from_json::<E>(&j.vk_beta_2).map_err(bad("vk_beta_2", 0))?,
            gamma_g2: g2_from_json::<E>(&j.vk_gamma_2).map_err(bad("vk_gamma_2", 0))?,
            delta_g2: g2_from_json::<E>(&j.vk_delta_2).map_err(bad("vk_delta_2", 0))?,
            ic: j
                .ic
                .iter()
                .enumerate()
                .map(|(i, p)| g1_from_json::<E>(p).map_err(bad("IC point", i)))
                .collect::<Result<_, _>>()?,
        })
    }
}

/// Parses `public.json` into scalars; every entry must be a decimal below r.
pub fn public_from_json<E: Curve>(values: &[String]) -> Result<Vec<E::ScalarField>, Error> {
    values
        .iter()
        .enumerate()
        .map(|(i, s)| {
            crate::curve::field_from_decimal::<E::ScalarField>(s).ok_or_else(|| {
                Error::InvalidScalar {
                    what: format!("public signal {i}"),
                    value: s.chars().take(80).collect(),
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bn254;

    #[test]
    fn vk_json_refuses_ic_and_n_public_that_disagree() {
        let g1 = g1_to_json::<Bn254>(&<Bn254 as ark_ec::pairing::Pairing>::G1Affine::generator());
        let g2 = g2_to_json::<Bn254>(&<Bn254 as ark_ec::pairing::Pairing>::G2Affine::generator());
        let vk = |n_public, ic| VerificationKeyJson {
            protocol: "groth16".into(),
            curve: "bn128".into(),
            n_public,
            vk_alpha_1: g1.clone(),
            vk_beta_2: g2.clone(),
            vk_gamma_2: g2.clone(),
            vk_delta_2: g2.clone(),
            vk_alphabeta_12: Vec::new(),
            ic,
        };
        let ok = VerifyingKey::<Bn254>::from_json(&vk(1, vec![g1.clone(); 2])).unwrap();
        assert_eq!(ok.n_public(), 1);
        assert!(VerifyingKey::<Bn254>::from_json(&vk(2, vec![g1.clone(); 2])).is_err());
        // nPublic = 2^64 − 1 with an empty IC: nPublic + 1 overflowed (a panic with overflow
        // checks; in release it wrapped to 0, matched the empty IC, and the key's
        // n_public() underflowed later).
        let e = VerifyingKey::<Bn254>::from_json(&vk(u64::MAX, Vec::new())).unwrap_err();
        assert!(matches!(e, Error::InvalidJson(_)), "{e}");
    }
}
