//! `zkpipe verify <verification_key.json | circuit.zkey> <public.json> <proof.json>`
//! (snarkjs's argument order). Prints `OK` and exits 0 for a valid proof.

use super::with_curve;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use zkpipe_core::proof::Proof;
use zkpipe_core::verify::public_from_json;
use zkpipe_core::{verify, Curve, PointChecks, VerifyingKey};
use zkpipe_formats::json::{read_json, ProofJson, PublicJson, VerificationKeyJson};
use zkpipe_formats::zkey::ZkeyFile;
use zkpipe_formats::{sniff, CurveId, FileKind};

/// Arguments of `verify`.
#[derive(clap::Args)]
pub struct Args {
    /// Verification key JSON, or the zkey itself.
    vk: PathBuf,
    /// Public signals JSON.
    public: PathBuf,
    /// Proof JSON.
    proof: PathBuf,
}

/// Where the verification key comes from.
enum KeySource {
    Json(VerificationKeyJson),
    Zkey(ZkeyFile),
}

/// Runs `verify`.
pub fn run(a: Args) -> Result<()> {
    let (source, curve) = match sniff(&a.vk)? {
        FileKind::Zkey => {
            let z = ZkeyFile::open(&a.vk)?;
            let c = z.header.curve;
            (KeySource::Zkey(z), c)
        }
        _ => {
            let j: VerificationKeyJson = read_json(&a.vk)?;
            let c = CurveId::from_snarkjs_name(&j.curve)
                .with_context(|| format!("{}: unknown curve {:?}", a.vk.display(), j.curve))?;
            (KeySource::Json(j), c)
        }
    };
    let ok = with_curve!(curve, E => verify_with::<E>(&a, source))?;
    if !ok {
        bail!(
            "{}: INVALID proof: the pairing check failed",
            a.proof.display()
        );
    }
    println!("OK");
    Ok(())
}

fn verify_with<E: Curve>(a: &Args, source: KeySource) -> Result<bool> {
    let vk = match source {
        KeySource::Json(j) => {
            VerifyingKey::<E>::from_json(&j).with_context(|| a.vk.display().to_string())?
        }
        KeySource::Zkey(z) => vk_from_zkey::<E>(&z)?,
    };
    let public: PublicJson = read_json(&a.public)?;
    let public = public_from_json::<E>(&public).with_context(|| a.public.display().to_string())?;
    let proof: ProofJson = read_json(&a.proof)?;
    let proof = Proof::<E>::from_json(&proof).with_context(|| a.proof.display().to_string())?;
    verify(&vk, &public, &proof).with_context(|| a.public.display().to_string())
}

/// The verification key of a zkey (header and IC only, points checked).
pub fn vk_from_zkey<E: Curve>(z: &ZkeyFile) -> Result<VerifyingKey<E>> {
    Ok(VerifyingKey::<E>::from_zkey(z, PointChecks::Batched)?)
}
