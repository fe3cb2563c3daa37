//! `zkpipe check <r1cs> <wtns>`: does the witness satisfy the constraints?

use super::with_curve;
use anyhow::{Context, Result};
use std::path::Path;
use zkpipe_core::check::check_r1cs;
use zkpipe_formats::r1cs::R1cs;
use zkpipe_formats::wtns::Wtns;

/// Runs `check`.
pub fn run(r1cs_path: &Path, wtns_path: &Path) -> Result<()> {
    let r1cs = R1cs::read(r1cs_path)?;
    let wtns = Wtns::read(wtns_path)?;
    with_curve!(r1cs.header.curve, E => check_r1cs::<E>(&r1cs, &wtns))
        .with_context(|| wtns_path.display().to_string())?;
    println!("OK: {} constraints satisfied", r1cs.header.n_constraints);
    Ok(())
}
