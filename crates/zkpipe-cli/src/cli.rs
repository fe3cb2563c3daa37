//! `zkpipe`'s command line: the product's commands, run by [`crate::program::main`].
//! The lab's `bench`, `loadtest` and `sweep` are the `zkpipe-bench` binary's.

use crate::commands;
use crate::program::{LogArgs, Program};
use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "zkpipe",
    version = crate::VERSION,
    about = "Groth16 proving engine for snarkjs/circom (BN254, BLS12-381)",
    after_help = "Exit status: 0 success; 1 an error, an invalid proof or a failed job; \
        2 a usage error, or `await` timed out."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    log: LogArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Prove: `zkpipe prove <circuit.zkey> <witness.wtns> <proof.json> <public.json>`.
    Prove(commands::prove::Args),
    /// Prove from circuit inputs: `zkpipe fullprove <input.json> <circuit.wasm | generator>
    /// <circuit.zkey> <proof.json> <public.json>`.
    Fullprove(commands::fullprove::Args),
    /// Witness files: `zkpipe wtns calculate <circuit.wasm | generator> <input.json> <witness.wtns>`.
    #[command(subcommand)]
    Wtns(WtnsCommand),
    /// Verify: `zkpipe verify <verification_key.json | circuit.zkey> <public.json> <proof.json>`.
    Verify(commands::verify::Args),
    /// Write a zkey's verification key as snarkjs's `verification_key.json`.
    ExportVk(commands::export_vk::Args),
    /// Export a Solidity verifier, a proof's calldata for it, or the verification key
    /// (snarkjs's `zkey export …`).
    Export(commands::export::Args),
    /// Describe a zkey, wtns or r1cs file: curve, sizes, sections.
    Inspect(commands::inspect::Args),
    /// Make an INSECURE development key for an r1cs: `zkpipe setup --dev <r1cs> <zkey>`.
    Setup(commands::setup::Args),
    /// Write a satisfiable synthetic circuit and its witness, of any size.
    Synth(commands::synth::Args),
    /// Check a witness against an r1cs and name the first unsatisfied constraint.
    Check {
        /// The constraint system.
        r1cs: PathBuf,
        /// The witness.
        wtns: PathBuf,
    },
    /// Run the proving daemon: `zkpipe serve [--config zkpipe.toml]`.
    Serve(commands::serve::Args),
    /// Queue a job on the daemon (one partition per witness); prints the job id.
    Submit(commands::submit::Args),
    /// Wait for a job on the daemon and write its proofs.
    Await(commands::await_job::Args),
    /// Show the daemon's queues, jobs, keys, devices and memory.
    Status(commands::status::Args),
    /// Cancel a job on the daemon.
    Cancel(commands::cancel::Args),
    /// Load a key on the daemon now.
    Preload(commands::preload::Args),
    /// Evict an unused key from the daemon now.
    Evict(commands::preload::EvictArgs),
    /// Print a shell completion script: `zkpipe completions bash|zsh|fish`.
    Completions(commands::completions::Args),
    /// Print the manual page (roff): `zkpipe man | man -l -`.
    Man(commands::man::Args),
}

/// `zkpipe wtns …`, as snarkjs groups them.
#[derive(Subcommand)]
enum WtnsCommand {
    /// Compute a witness from circuit inputs with circom's wasm or native generator:
    /// `zkpipe wtns calculate <circuit.wasm | generator> <input.json> <witness.wtns>`.
    Calculate(commands::wtns_calculate::Args),
}

/// `zkpipe`'s `main`: parses the command line, runs the command, returns its exit status.
pub fn main() -> ExitCode {
    crate::program::main::<Cli>()
}

impl Program for Cli {
    const NAME: &'static str = "zkpipe";

    fn log(&self) -> &LogArgs {
        &self.log
    }

    fn moves_witnesses(&self) -> bool {
        matches!(self.command, Command::Serve(_) | Command::Submit(_))
    }

    fn run(self) -> anyhow::Result<()> {
        match self.command {
            Command::Prove(a) => commands::prove::run(a),
            Command::Fullprove(a) => commands::fullprove::run(a),
            Command::Wtns(WtnsCommand::Calculate(a)) => commands::wtns_calculate::run(a),
            Command::Verify(a) => commands::verify::run(a),
            Command::ExportVk(a) => commands::export_vk::run(a),
            Command::Export(a) => commands::export::run(a),
            Command::Inspect(a) => commands::inspect::run(a),
            Command::Setup(a) => commands::setup::run(a),
            Command::Synth(a) => commands::synth::run(a),
            Command::Check { r1cs, wtns } => commands::check::run(&r1cs, &wtns),
            Command::Serve(a) => commands::serve::run(a),
            Command::Submit(a) => commands::submit::run(a),
            Command::Await(a) => commands::await_job::run(a),
            Command::Status(a) => commands::status::run(a),
            Command::Cancel(a) => commands::cancel::run(a),
            Command::Preload(a) => commands::preload::preload(a),
            Command::Evict(a) => commands::preload::evict(a),
            Command::Completions(a) => commands::completions::run(a, Cli::command()),
            Command::Man(a) => commands::man::run(a, Cli::command()),
        }
    }
}
