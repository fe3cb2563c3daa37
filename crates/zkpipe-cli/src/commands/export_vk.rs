//! `zkpipe export-vk <zkey> <verification_key.json>`.

use super::verify::vk_from_zkey;
use super::with_curve;
use anyhow::Result;
use std::path::PathBuf;
use zkpipe_formats::json::to_json_bytes;
use zkpipe_formats::zkey::ZkeyFile;

/// Arguments of `export-vk`.
#[derive(clap::Args)]
#[command(after_help = super::outputs_help!("An existing file is replaced (as snarkjs does)."))]
pub struct Args {
    /// Proving key.
    zkey: PathBuf,
    /// Where to write the verification key JSON (`-`: stdout).
    vk: PathBuf,
}

/// Runs `export-vk`.
pub fn run(a: Args) -> Result<()> {
    let plan = super::replace_outputs(&[&a.vk], &[&a.zkey])?;
    let z = ZkeyFile::open(&a.zkey)?;
    let json = with_curve!(z.header.curve, E => vk_from_zkey::<E>(&z)?.to_json());
    plan.write(&[&to_json_bytes(&json)])?;
    Ok(())
}
