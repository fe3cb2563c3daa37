//! `zkpipe fullprove <input.json> <generator> <circuit.zkey> <proof.json> <public.json>`
//! (snarkjs's `groth16 fullprove` order): the witness is computed in memory from the inputs
//! (as `wtns calculate`), then proved as `prove` proves a `.wtns`.

use super::prove::{prove_to, ProveFlags};
use super::wtns_calculate::{calculate, read_inputs};
use anyhow::Result;
use std::path::PathBuf;
use zkpipe_witness::Generator;

/// Arguments of `fullprove`.
#[derive(clap::Args)]
#[command(after_help = super::outputs_help!("An existing proof or public file is replaced (as snarkjs does)."))]
pub struct Args {
    #[command(flatten)]
    flags: ProveFlags,
    /// Circuit inputs, as snarkjs reads them; `-`: read them from stdin.
    input: PathBuf,
    /// Witness generator: circom's `circuit.wasm`, or its native generator.
    generator: PathBuf,
    /// Proving key (snarkjs Groth16 .zkey).
    zkey: PathBuf,
    /// Where to write the proof (`-`: stdout).
    proof: PathBuf,
    /// Where to write the public signals (`-`: stdout).
    public: PathBuf,
}

/// Runs `fullprove`.
pub fn run(a: Args) -> Result<()> {
    a.flags.threads.install()?;
    let plan = super::replace_outputs(&[&a.proof, &a.public], &[&a.input, &a.generator, &a.zkey])?;
    // Inputs and generator are checked before the key is loaded: their errors come first.
    let inputs = read_inputs(&a.input)?;
    let generator = Generator::open(&a.generator)?;
    let stdout_free = !plan.writes_stdout();
    let name = witness_name(&a);
    prove_to(&a.flags, &a.zkey, &name, plan, || {
        calculate(&generator, &a.generator, &inputs, &a.input, stdout_free)
    })
}

/// How messages name the in-memory witness.
fn witness_name(a: &Args) -> PathBuf {
    PathBuf::from(format!(
        "the witness of {} from {}",
        super::wtns_calculate::shown(&a.input),
        a.generator.display()
    ))
}
