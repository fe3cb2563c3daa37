//! The Groth16 pairing check with a verification key prepared once for many proofs (the
//! daemon's self-check). A module of its own, not part of `verify` (which imports `key`),
//! so that a compiled key can hold one.

use crate::curve::Curve;
use crate::error::Error;
use crate::proof::Proof;
use ark_ec::pairing::PairingOutput;
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM};
use ark_ff::PrimeField;

/// A verification key made ready for many checks, as ark-groth16's
/// `PreparedVerifyingKey`: e(α, β) computed once, and −γ, −δ with their Miller-loop lines
/// worked out once. A check is then a 3-pair Miller loop (only B's lines computed) and one
/// final exponentiation, against [`crate::verify::verify`]'s 4 pairs with every G2 point
/// prepared anew. Worth it where one key checks many proofs (the daemon's self-check); a
/// one-shot check is cheaper with `verify`, which needs no e(α, β) of its own.
#[derive(Debug, Clone)]
pub struct PreparedVerifyingKey<E: Curve> {
    ic: Vec<E::G1Affine>,
    alpha_beta: PairingOutput<E>,
    neg_gamma: E::G2Prepared,
    neg_delta: E::G2Prepared,
}

impl<E: Curve> PreparedVerifyingKey<E> {
    /// Prepares a key of α·G1, β·G2, γ·G2, δ·G2 and its IC points (a pairing and two G2
    /// preparations); [`crate::key::VerifyingKey::prepare`] is the usual way in.
    pub fn new(
        alpha_g1: E::G1Affine,
        beta_g2: E::G2Affine,
        gamma_g2: E::G2Affine,
        delta_g2: E::G2Affine,
        ic: Vec<E::G1Affine>,
    ) -> Self {
        Self {
            ic,
            alpha_beta: E::pairing(alpha_g1, beta_g2),
            neg_gamma: E::G2Prepared::from((-gamma_g2.into_group()).into_affine()),
            neg_delta: E::G2Prepared::from((-delta_g2.into_group()).into_affine()),
        }
    }

    /// The same answer as [`crate::verify::verify`]:
    /// e(A, B) = e(α, β) · e(vk_x, γ) · e(C, δ).
    pub fn verify(&self, public: &[E::ScalarField], proof: &Proof<E>) -> Result<bool, Error> {
        let vk_x = public_combination::<E>(&self.ic, public)?;
        let ml = E::multi_miller_loop(
            [proof.a, vk_x, proof.c].map(E::G1Prepared::from),
            [
                E::G2Prepared::from(proof.b),
                self.neg_gamma.clone(),
                self.neg_delta.clone(),
            ],
        );
        Ok(E::final_exponentiation(ml) == Some(self.alpha_beta))
    }
}

/// vk_x = IC₀ + Σ publicᵢ · ICᵢ₊₁; an error if the count does not match the key's.
pub(crate) fn public_combination<E: Curve>(
    ic: &[E::G1Affine],
    public: &[E::ScalarField],
) -> Result<E::G1Affine, Error> {
    if public.len() + 1 != ic.len() {
        return Err(Error::PublicInputCount {
            expected: ic.len().saturating_sub(1),
            found: public.len(),
        });
    }
    let scalars: Vec<_> = public.iter().map(|x| x.into_bigint()).collect();
    Ok((E::G1::msm_bigint(&ic[1..], &scalars) + ic[0]).into_affine())
}
