//! `zkpipe export solidityverifier <circuit.zkey | verification_key.json> <Verifier.sol>`
//! (snarkjs's `zkey export solidityverifier`, which takes only a zkey).

use super::verify::vk_from_zkey;
use anyhow::{Context, Result};
use std::path::PathBuf;
use zkpipe_core::{Bn254, VerifyingKey};
use zkpipe_formats::json::{read_json, VerificationKeyJson};
use zkpipe_formats::solidity;
use zkpipe_formats::zkey::ZkeyFile;
use zkpipe_formats::{sniff, CurveId, Error, ErrorKind, FileKind};

/// Arguments of `export solidityverifier`.
#[derive(clap::Args)]
#[command(
    after_help = super::outputs_help!("An existing file is replaced (as snarkjs does).")
)]
pub struct Args {
    /// The proving key, or its verification_key.json.
    key: PathBuf,
    /// Where to write the contract (`-`: stdout).
    verifier: PathBuf,
}

/// Runs `export solidityverifier`.
pub fn run(a: Args) -> Result<()> {
    let plan = super::replace_outputs(&[&a.verifier], &[&a.key])?;
    let refuse = |curve| Error::new(&a.key, ErrorKind::NotEvmCurve(curve));
    let vk = match sniff(&a.key)? {
        FileKind::Zkey => {
            let z = ZkeyFile::open(&a.key)?;
            if z.header.curve != CurveId::Bn254 {
                return Err(refuse(z.header.curve).into());
            }
            vk_from_zkey::<Bn254>(&z)?.to_json()
        }
        _ => {
            let j: VerificationKeyJson = read_json(&a.key)?;
            // The generator refuses other curves; BN254 points are checked here.
            if CurveId::from_snarkjs_name(&j.curve) == Some(CurveId::Bn254) {
                VerifyingKey::<Bn254>::from_json(&j)
                    .with_context(|| a.key.display().to_string())?;
            }
            j
        }
    };
    let contract = solidity::verifier(&vk).map_err(|k| Error::new(&a.key, k))?;
    plan.write(&[contract.as_bytes()])?;
    Ok(())
}
