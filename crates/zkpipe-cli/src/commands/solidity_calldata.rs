//! `zkpipe export soliditycalldata <public.json> <proof.json>` (snarkjs's argument order):
//! prints the arguments of the verifier contract's `verifyProof` on stdout.

use anyhow::{bail, Result};
use serde::de::DeserializeOwned;
use std::io::Write;
use std::path::{Path, PathBuf};
use zkpipe_formats::json::{read_json, JsonDoc, ProofJson, PublicJson};
use zkpipe_formats::solidity::{public_calldata, ProofCalldata};
use zkpipe_formats::{Error, ErrorKind};

/// Arguments of `export soliditycalldata`.
#[derive(clap::Args)]
#[command(
    after_help = "Exit status: 0 the calldata was printed; 1 a file is missing or \
        malformed; 2 a usage error."
)]
pub struct Args {
    /// Public signals JSON.
    public: PathBuf,
    /// Proof JSON (snarkjs's, zkpipe's or rapidsnark's).
    proof: PathBuf,
}

/// The usage line, for files given in the wrong order.
const ORDER: &str = "the order is `zkpipe export soliditycalldata <public.json> <proof.json>`";

/// Runs `export soliditycalldata`.
pub fn run(a: Args) -> Result<()> {
    let public: PublicJson = read_doc(&a.public, JsonDoc::PublicSignals)?;
    let proof: ProofJson = read_doc(&a.proof, JsonDoc::Proof)?;
    let proof = ProofCalldata::from_json(&proof).map_err(|k| Error::new(&a.proof, k))?;
    let public = public_calldata(&public).map_err(|k| Error::new(&a.public, k))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", proof.render(&public))?;
    out.flush()?;
    Ok(())
}

/// Reads a JSON file that should hold `wanted`, naming the argument order when it
/// recognisably holds another snarkjs document.
fn read_doc<T: DeserializeOwned>(path: &Path, wanted: JsonDoc) -> Result<T> {
    let value: serde_json::Value = read_json(path)?;
    let found = JsonDoc::of(&value);
    if found != wanted && found != JsonDoc::Other {
        bail!("{}: holds {found}, not {wanted}; {ORDER}", path.display());
    }
    Ok(serde_json::from_value(value)
        .map_err(|e| Error::new(path, ErrorKind::Json(e.to_string())))?)
}
