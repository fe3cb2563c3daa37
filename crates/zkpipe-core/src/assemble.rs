//! Step 4, assemble: add the key's α, β, δ terms with fresh randomness r, s, exactly as
//! snarkjs does:
//!
//! ```text
//! π_A  = α₁ + [A]₁ + r·δ₁          π_B = β₂ + [B]₂ + s·δ₂
//! π_B₁ = β₁ + [B]₁ + s·δ₁          (the G1 twin of π_B, only used for π_C)
//! π_C  = [C]₁ + [H]₁ + s·π_A + r·π_B₁ − r·s·δ₁
//! ```

use crate::curve::Curve;
use crate::key::CompiledKey;
use crate::msm::MsmResults;
use crate::proof::Proof;
use ark_ec::CurveGroup;

/// The proof from the MSM results and blinding factors r, s.
pub fn assemble<E: Curve>(
    key: &CompiledKey<E>,
    m: &MsmResults<E>,
    r: E::ScalarField,
    s: E::ScalarField,
) -> Proof<E> {
    let delta1: E::G1 = key.delta_g1.into();
    let pi_a = m.a + key.vk.alpha_g1 + delta1 * r;
    let pi_b = m.b2 + key.vk.beta_g2 + E::G2::from(key.vk.delta_g2) * s;
    let pi_b1 = m.b1 + key.beta_g1 + delta1 * s;
    let pi_c = m.c + m.h + pi_a * s + pi_b1 * r - delta1 * (r * s);
    let a = pi_a.into_affine();
    let c = pi_c.into_affine();
    Proof {
        a,
        b: pi_b.into_affine(),
        c,
    }
}
