//! One module per subcommand. Curves are chosen here, from file headers, and everything
//! below is generic.

pub mod await_job;
pub mod cancel;
pub mod check;
pub mod client;
pub mod completions;
pub mod export;
pub mod export_vk;
pub mod fullprove;
pub mod inspect;
pub mod man;
pub mod preload;
pub mod prove;
pub mod serve;
pub mod setup;
pub mod solidity_calldata;
pub mod solidity_verifier;
pub mod status;
pub mod submit;
pub mod synth;
pub mod verify;
pub mod wtns_calculate;

use std::path::Path;
use zkpipe_formats::files::{Existing, Plan};
use zkpipe_formats::ErrorKind;

/// Runs a generic expression with `E` bound to the engine of a [`zkpipe_formats::CurveId`]:
/// `with_curve!(header.curve, E => prove_with::<E>(…))`.
#[macro_export]
macro_rules! with_curve {
    ($curve:expr, $E:ident => $body:expr) => {
        match $curve {
            $crate::deps::zkpipe_formats::CurveId::Bn254 => {
                type $E = $crate::deps::zkpipe_core::Bn254;
                $body
            }
            $crate::deps::zkpipe_formats::CurveId::Bls12_381 => {
                type $E = $crate::deps::zkpipe_core::Bls12_381;
                $body
            }
        }
    };
}
pub use crate::with_curve;

/// What a command's `--help` says about its output files (`{existing}` is what happens to
/// an existing regular file).
macro_rules! outputs_help {
    ($existing:literal) => {
        concat!(
            "Outputs: `-` is stdout. ",
            $existing,
            " A FIFO or device (e.g. /dev/null) is written in place, a symlink's target \
             is replaced and the link kept. Outputs are checked before the work: a missing \
             directory, an output that is a directory, or an output that is also an input \
             or another output is refused, and a failed run leaves existing files as they were."
        )
    };
}
pub(crate) use outputs_help;

/// Plans outputs that replace existing files (prove, export-vk, await, reports).
pub fn replace_outputs(outputs: &[&Path], inputs: &[&Path]) -> anyhow::Result<Plan> {
    Ok(Plan::new(outputs, inputs, Existing::Replace)?)
}

/// Plans outputs that refuse to replace existing files unless `force` is set (setup, synth).
pub fn new_outputs(outputs: &[&Path], inputs: &[&Path], force: bool) -> anyhow::Result<Plan> {
    let existing = if force {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    Plan::new(outputs, inputs, existing).map_err(|e| match e.kind {
        ErrorKind::AlreadyExists => anyhow::anyhow!(
            "{}: already exists (use --force to overwrite)",
            e.path.display()
        ),
        _ => e.into(),
    })
}

/// An error that asks for an exit status other than 1 (`await`'s timeout exits 2).
#[derive(Debug)]
pub struct Exit {
    /// The exit status.
    pub status: u8,
    /// The one-line message.
    pub message: String,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// The exit status for an error: 1 unless it is an [`Exit`].
pub fn exit_status(e: &anyhow::Error) -> u8 {
    e.downcast_ref::<Exit>().map_or(1, |x| x.status)
}

/// `--threads N` for commands that run on one pool.
#[derive(clap::Args, Clone, Copy)]
pub struct Threads {
    /// Worker threads for CPU stages (default: all cores).
    #[arg(long, value_parser = at_least_one)]
    threads: Option<usize>,
}

/// A count of at least 1; 0 is a usage error (exit status 2), as clap's own are.
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

impl Threads {
    /// Sizes the global rayon pool; call before any parallel work.
    pub fn install(self) -> anyhow::Result<()> {
        if let Some(n) = self.threads {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build_global()?;
        }
        Ok(())
    }
}
