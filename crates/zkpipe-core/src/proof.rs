//! A Groth16 proof and its snarkjs JSON form.

use crate::curve::{g1_from_json, g1_to_json, g2_from_json, g2_to_json, Curve};
use crate::error::Error;
use zkpipe_formats::json::ProofJson;

/// π = (A, B, C).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proof<E: Curve> {
    /// π_A ∈ G1.
    pub a: E::G1Affine,
    /// π_B ∈ G2.
    pub b: E::G2Affine,
    /// π_C ∈ G1.
    pub c: E::G1Affine,
}

impl<E: Curve> Proof<E> {
    /// snarkjs's `proof.json` shape.
    pub fn to_json(&self) -> ProofJson {
        ProofJson {
            pi_a: g1_to_json::<E>(&self.a),
            pi_b: g2_to_json::<E>(&self.b),
            pi_c: g1_to_json::<E>(&self.c),
            protocol: "groth16".into(),
            curve: Some(E::ID.snarkjs_name().into()),
        }
    }

    /// Parses `proof.json`: protocol, curve, and every point (on curve, in subgroup). A
    /// proof without a `curve` field (rapidsnark writes none) is read as a proof on `E`.
    pub fn from_json(j: &ProofJson) -> Result<Self, Error> {
        if j.protocol != "groth16" {
            return Err(Error::InvalidJson(format!(
                "protocol is {:?}, expected \"groth16\"",
                j.protocol
            )));
        }
        if let Some(curve) = &j.curve {
            check_curve_name::<E>(curve)?;
        }
        let bad = |what: &'static str| {
            move |problem| Error::InvalidPoint {
                what: what.to_string(),
                index: 0,
                problem,
            }
        };
        Ok(Self {
            a: g1_from_json::<E>(&j.pi_a).map_err(bad("pi_a"))?,
            b: g2_from_json::<E>(&j.pi_b).map_err(bad("pi_b"))?,
            c: g1_from_json::<E>(&j.pi_c).map_err(bad("pi_c"))?,
        })
    }
}

/// Checks a JSON `curve` field names this curve.
pub fn check_curve_name<E: Curve>(name: &str) -> Result<(), Error> {
    match zkpipe_formats::CurveId::from_snarkjs_name(name) {
        Some(c) if c == E::ID => Ok(()),
        Some(c) => Err(Error::CurveMismatch {
            what: "JSON curve field",
            found: c,
            expected: E::ID,
        }),
        None => Err(Error::InvalidJson(format!("unknown curve {name:?}"))),
    }
}
