//! The Groth16 pairing check with a verification key prepared once for many proofs (the
//! daemon's self-check). A module of its own, not part of `verify` (which imports `key`),
//! so that a compiled key can hold one.

use crate::curve::Curve;
use crate::error::Error;
use crate::proof::Proof;
use ark_ec::pairing::PairingOutput;
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM};
use ark_ff::{PrimeField, Zero};
use rand::{CryptoRng, Rng, RngCore};
use rayon::prelude::*;

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

    /// Whether every proof passes, checked together with random 128-bit weights rᵢ (the
    /// small-exponent batch test, as bellman's batch verifier):
    /// ∏ e(rᵢ·Aᵢ, Bᵢ) · e(−Σ rᵢ·vk_xᵢ, γ) · e(−Σ rᵢ·Cᵢ, δ) = e(α, β)^(Σ rᵢ).
    /// One (k + 2)-pair Miller loop and one final exponentiation for k proofs, against k
    /// 3-pair loops and k exponentiations one by one. `false` says only that some proof
    /// failed: [`Self::verify`] each to find it. For the daemon's self-check of its own
    /// proofs, a guard against faults: an adversary's points outside the prime-order
    /// subgroups are not checked for (snarkjs's verifier is the one for untrusted proofs).
    /// A public-input count that does not match the key is an error.
    pub fn verify_batch(
        &self,
        items: &[(&[E::ScalarField], &Proof<E>)],
        rng: &mut (impl RngCore + CryptoRng),
    ) -> Result<bool, Error> {
        match items {
            [] => return Ok(true),
            [(public, proof)] => return self.verify(public, proof),
            _ => {}
        }
        let weights: Vec<E::ScalarField> = items
            .iter()
            .map(|_| E::ScalarField::from(rng.gen::<u128>() | 1))
            .collect();
        // Σ rᵢ·vk_xᵢ = (Σ rᵢ)·IC₀ + Σⱼ (Σᵢ rᵢ·publicᵢⱼ)·ICⱼ₊₁: one MSM over IC.
        let mut ic_scalars = vec![E::ScalarField::zero(); self.ic.len()];
        for ((public, _), r) in items.iter().zip(&weights) {
            check_public_count(&self.ic, public)?;
            ic_scalars[0] += r;
            for (s, x) in ic_scalars[1..].iter_mut().zip(public.iter()) {
                *s += *r * x;
            }
        }
        let bigints = |v: &[E::ScalarField]| v.iter().map(|x| x.into_bigint()).collect::<Vec<_>>();
        let vk_x = E::G1::msm_bigint(&self.ic, &bigints(&ic_scalars));
        let cs: Vec<E::G1Affine> = items.iter().map(|(_, p)| p.c).collect();
        let c = E::G1::msm_bigint(&cs, &bigints(&weights));
        // Each proof's pair on its own task: B's line coefficients are most of the work.
        let (mut g1, mut g2): (Vec<E::G1Prepared>, Vec<E::G2Prepared>) = items
            .par_iter()
            .zip(&weights)
            .map(|((_, p), r)| {
                (
                    E::G1Prepared::from((p.a * r).into_affine()),
                    E::G2Prepared::from(p.b),
                )
            })
            .unzip();
        g1.push(E::G1Prepared::from(vk_x.into_affine()));
        g1.push(E::G1Prepared::from(c.into_affine()));
        g2.push(self.neg_gamma.clone());
        g2.push(self.neg_delta.clone());
        let total: E::ScalarField = weights.iter().sum();
        let ml = E::multi_miller_loop(g1, g2);
        Ok(E::final_exponentiation(ml) == Some(self.alpha_beta * total))
    }
}

/// An error unless there is one public input per IC point after the first.
fn check_public_count<G, F>(ic: &[G], public: &[F]) -> Result<(), Error> {
    if public.len() + 1 != ic.len() {
        return Err(Error::PublicInputCount {
            expected: ic.len().saturating_sub(1),
            found: public.len(),
        });
    }
    Ok(())
}

/// vk_x = IC₀ + Σ publicᵢ · ICᵢ₊₁; an error if the count does not match the key's.
pub(crate) fn public_combination<E: Curve>(
    ic: &[E::G1Affine],
    public: &[E::ScalarField],
) -> Result<E::G1Affine, Error> {
    check_public_count(ic, public)?;
    let scalars: Vec<_> = public.iter().map(|x| x.into_bigint()).collect();
    Ok((E::G1::msm_bigint(&ic[1..], &scalars) + ic[0]).into_affine())
}
