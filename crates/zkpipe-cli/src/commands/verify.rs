//! `zkpipe verify <verification_key.json | circuit.zkey> <public.json> <proof.json>`
//! (snarkjs's argument order). Prints `OK` and exits 0 for a valid proof.

use super::with_curve;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use zkpipe_core::proof::Proof;
use zkpipe_core::verify::public_from_json;
use zkpipe_core::{verify, Curve, PointChecks, VerifyingKey};
use zkpipe_formats::json::{read_json, JsonDoc, ProofJson, PublicJson, VerificationKeyJson};
use zkpipe_formats::zkey::ZkeyFile;
use zkpipe_formats::{sniff, CurveId, ErrorKind, FileKind};

/// Arguments of `verify`.
#[derive(clap::Args)]
#[command(
    after_help = "Exit status: 0 the proof is valid; 1 it is invalid, or a file is \
    missing or malformed; 2 a usage error."
)]
pub struct Args {
    /// Verification key JSON, or the zkey itself.
    vk: PathBuf,
    /// Public signals JSON.
    public: PathBuf,
    /// Proof JSON.
    proof: PathBuf,
    /// Print `{"valid": true|false, "curve": …}` on stdout instead of `OK` (the exit status
    /// is the same).
    #[arg(long)]
    json: bool,
}

/// The usage line, for files given in the wrong order.
const ORDER: &str = "the order is `zkpipe verify <vk|zkey> <public.json> <proof.json>`";

/// Where the verification key comes from.
enum KeySource {
    Json(VerificationKeyJson),
    Zkey(ZkeyFile),
}

/// Runs `verify`.
pub fn run(a: Args) -> Result<()> {
    expect(&a.vk, &[Holds::Vk, Holds::Zkey])?;
    expect(&a.public, &[Holds::Public])?;
    expect(&a.proof, &[Holds::Proof])?;
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
    if a.json {
        let doc = serde_json::json!({"valid": ok, "curve": curve.snarkjs_name()});
        println!("{doc}");
    }
    if !ok {
        bail!(
            "{}: INVALID proof: the pairing check failed",
            a.proof.display()
        );
    }
    if !a.json {
        println!("OK");
    }
    Ok(())
}

/// What a file given to `verify` recognisably holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Holds {
    Zkey,
    Wtns,
    R1cs,
    Vk,
    Public,
    Proof,
}

impl Holds {
    fn name(self) -> &'static str {
        match self {
            Self::Zkey => "a zkey",
            Self::Wtns => "a witness (wtns)",
            Self::R1cs => "a constraint system (r1cs)",
            Self::Vk => "a verification key",
            Self::Public => "public signals",
            Self::Proof => "a proof",
        }
    }

    /// None for contents no kind fits: their parser says what is wrong with them.
    fn of(path: &Path) -> Result<Option<Self>> {
        Ok(Some(match sniff(path) {
            Ok(FileKind::Zkey) => Self::Zkey,
            Ok(FileKind::Wtns) => Self::Wtns,
            Ok(FileKind::R1cs) => Self::R1cs,
            Ok(FileKind::Json) => match JsonDoc::of(&read_json::<serde_json::Value>(path)?) {
                JsonDoc::Proof => Self::Proof,
                JsonDoc::VerificationKey => Self::Vk,
                JsonDoc::PublicSignals => Self::Public,
                JsonDoc::Other => return Ok(None),
            },
            Err(e) if matches!(e.kind, ErrorKind::BadMagic { .. }) => return Ok(None),
            // A directory or an empty file says so here.
            Err(e) => return Err(e.into()),
        }))
    }
}

/// Refuses a file that recognisably holds something else than `wanted` (e.g. the vk and
/// public.json swapped), naming the argument order.
fn expect(path: &Path, wanted: &[Holds]) -> Result<()> {
    match Holds::of(path)? {
        Some(h) if !wanted.contains(&h) => {
            let wanted: Vec<&str> = wanted.iter().map(|w| w.name()).collect();
            bail!(
                "{}: holds {}, not {}; {ORDER}",
                path.display(),
                h.name(),
                wanted.join(" or ")
            )
        }
        _ => Ok(()),
    }
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
