//! The JSON files `zkpipe verify` reads: proof, public signals, verification key. Each is
//! tried as both curves, as `verify` would with a key of either, and through the Solidity
//! exports (`export soliditycalldata`, `export solidityverifier`).

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use zkpipe_core::curve::{field_to_decimal, g1_to_json, g2_to_json, Curve};
use zkpipe_core::proof::Proof;
use zkpipe_core::verify::public_from_json;
use zkpipe_core::{Bls12_381, Bn254, VerifyingKey};
use zkpipe_formats::json::{parse_json, to_json_bytes, ProofJson, PublicJson, VerificationKeyJson};
use zkpipe_formats::solidity::{self, public_calldata, ProofCalldata};

/// Parses `T`; what parses, written as zkpipe writes JSON, parses to the same value.
fn shape<T: Serialize + DeserializeOwned + PartialEq + Debug>(data: &[u8]) -> Option<T> {
    let j: T = parse_json(data).ok()?;
    let again: T = parse_json(&to_json_bytes(&j)).expect("JSON written from a parsed value parses");
    assert_eq!(again, j);
    Some(j)
}

/// `proof.json` as `zkpipe verify` reads it.
pub fn proof_json(data: &[u8]) {
    let Some(j) = shape::<ProofJson>(data) else {
        return;
    };
    proof_as::<Bn254>(&j);
    proof_as::<Bls12_381>(&j);
    if let Ok(calldata) = ProofCalldata::from_json(&j) {
        let text = calldata.render(&[]);
        assert!(text.starts_with('[') && text.ends_with(",[]"), "{text}");
    }
}

fn proof_as<E: Curve>(j: &ProofJson) {
    let Ok(p) = Proof::<E>::from_json(j) else {
        return;
    };
    let again = Proof::<E>::from_json(&p.to_json()).expect("a proof written as JSON parses");
    assert_eq!(again, p);
}

/// `public.json` as `zkpipe verify` reads it.
pub fn public_json(data: &[u8]) {
    let Some(j) = shape::<PublicJson>(data) else {
        return;
    };
    public_as::<Bn254>(&j);
    public_as::<Bls12_381>(&j);
    if let Ok(words) = public_calldata(&j) {
        assert_eq!(words.len(), j.len());
    }
}

fn public_as<E: Curve>(j: &PublicJson) {
    let Ok(values) = public_from_json::<E>(j) else {
        return;
    };
    assert_eq!(values.len(), j.len());
    for (x, s) in values.iter().zip(j) {
        let digits = s.trim_start_matches('0');
        let canonical = if digits.is_empty() { "0" } else { digits };
        assert_eq!(field_to_decimal(x), canonical);
    }
}

/// `verification_key.json` as `zkpipe verify` reads it.
pub fn vk_json(data: &[u8]) {
    let Some(j) = shape::<VerificationKeyJson>(data) else {
        return;
    };
    vk_as::<Bn254>(&j);
    vk_as::<Bls12_381>(&j);
    if let Ok(contract) = solidity::verifier(&j) {
        assert!(contract.contains(&format!("uint[{}] calldata _pubSignals", j.n_public)));
    }
}

fn vk_as<E: Curve>(j: &VerificationKeyJson) {
    let Ok(vk) = VerifyingKey::<E>::from_json(j) else {
        return;
    };
    assert_eq!(vk.n_public() as u64, j.n_public);
    // Its points written back as JSON parse to the same key (`to_json` itself also
    // computes e(α, β), a pairing: no parsing, and too slow to run per input).
    let again = VerificationKeyJson {
        protocol: "groth16".into(),
        curve: E::ID.snarkjs_name().into(),
        n_public: j.n_public,
        vk_alpha_1: g1_to_json::<E>(&vk.alpha_g1),
        vk_beta_2: g2_to_json::<E>(&vk.beta_g2),
        vk_gamma_2: g2_to_json::<E>(&vk.gamma_g2),
        vk_delta_2: g2_to_json::<E>(&vk.delta_g2),
        vk_alphabeta_12: Vec::new(),
        ic: vk.ic.iter().map(g1_to_json::<E>).collect(),
    };
    let again = VerifyingKey::<E>::from_json(&again).expect("a key written as JSON parses");
    assert_eq!(again, vk);
}
