//! `zkpipe`: a Groth16 prover for snarkjs/circom users.
//!
//! Errors are printed as one line, `zkpipe: error: <file>: <what is wrong>`, with exit
//! status 1 (2 for a usage error or `await`'s timeout; a JSON error event with
//! `--log-format json`); outputs are written all-or-nothing. Logs go to stderr.
//!
//! Two environment variables, read once at startup (an unknown value is a one-line error,
//! exit status 2): `ZKPIPE_ALLOCATOR=system|mimalloc` (default system) picks the memory
//! allocator (`allocator`), and `ZKPIPE_HUGE_PAGES=0|1` (default 1) whether `serve`,
//! `submit` and `loadtest` ask glibc for huge pages (`huge_pages`).

mod allocator;
mod backend;
mod bench;
mod commands;
mod huge_pages;
mod logging;
mod progress;

use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: allocator::Dispatch = allocator::Dispatch;

/// `zkpipe --version`: the crate version and the commit it was built from (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("ZKPIPE_GIT_COMMIT"),
    ")"
);

#[derive(Parser)]
#[command(
    name = "zkpipe",
    version = VERSION,
    about = "Groth16 proving engine for snarkjs/circom (BN254, BLS12-381)",
    after_help = "Exit status: 0 success; 1 an error, an invalid proof or a failed job; \
        2 a usage error, or `await` timed out."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log level for zkpipe (error, warn, info, debug, trace, off), or a tracing filter
    /// directive such as "info,zkpipe_engine=debug".
    #[arg(long, global = true, env = "ZKPIPE_LOG", default_value = "info",
          value_name = "LEVEL", value_parser = logging::directive)]
    log_level: String,
    /// Log line format on stderr.
    #[arg(
        long,
        global = true,
        env = "ZKPIPE_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    log_format: logging::LogFormat,
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
    /// Prove repeatedly with the key resident; per-stage min/median/mean/max, A/B compare.
    Bench(commands::bench::Args),
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
    /// Load test a running daemon: c clients × j jobs × p partitions.
    Loadtest(commands::loadtest::Args),
    /// Concurrency sweep, with interleaved A/B of daemon configurations it starts itself.
    Sweep(commands::sweep::Args),
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

fn main() -> ExitCode {
    let settings = allocator::check().and_then(|a| Ok((a, huge_pages::wanted()?)));
    let (allocator, want_huge_pages) = match settings {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("zkpipe: error: {e}");
            return ExitCode::from(2);
        }
    };
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            // Usage errors too are one line.
            let msg = e.to_string();
            let lines: Vec<&str> = msg
                .lines()
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more"))
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let command = msg.lines().find_map(|l| l.trim().strip_prefix("Usage: "));
            eprintln!(
                "zkpipe: {} (see {} --help)",
                lines.join(" "),
                command.map_or("zkpipe".into(), command_path)
            );
            return ExitCode::from(2);
        }
    };
    logging::init(&cli.log_level, cli.log_format);
    tracing::debug!(allocator, huge_pages = want_huge_pages, "memory settings");
    if matches!(
        cli.command,
        Command::Serve(_) | Command::Submit(_) | Command::Loadtest(_) | Command::Sweep(_)
    ) {
        huge_pages::ensure(want_huge_pages);
    }
    let result = match cli.command {
        Command::Prove(a) => commands::prove::run(a),
        Command::Fullprove(a) => commands::fullprove::run(a),
        Command::Wtns(WtnsCommand::Calculate(a)) => commands::wtns_calculate::run(a),
        Command::Verify(a) => commands::verify::run(a),
        Command::ExportVk(a) => commands::export_vk::run(a),
        Command::Export(a) => commands::export::run(a),
        Command::Inspect(a) => commands::inspect::run(a),
        Command::Setup(a) => commands::setup::run(a),
        Command::Synth(a) => commands::synth::run(a),
        Command::Bench(a) => commands::bench::run(a),
        Command::Check { r1cs, wtns } => commands::check::run(&r1cs, &wtns),
        Command::Serve(a) => commands::serve::run(a),
        Command::Submit(a) => commands::submit::run(a),
        Command::Await(a) => commands::await_job::run(a),
        Command::Status(a) => commands::status::run(a),
        Command::Cancel(a) => commands::cancel::run(a),
        Command::Preload(a) => commands::preload::preload(a),
        Command::Evict(a) => commands::preload::evict(a),
        Command::Loadtest(a) => commands::loadtest::run(a),
        Command::Sweep(a) => commands::sweep::run(a),
        Command::Completions(a) => commands::completions::run(a, Cli::command()),
        Command::Man(a) => commands::man::run(a, Cli::command()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let msg = one_line(&e);
            if cli.log_format == logging::LogFormat::Json {
                tracing::error!(error = %msg, "exiting");
            } else {
                eprintln!("zkpipe: error: {msg}");
            }
            ExitCode::from(commands::exit_status(&e))
        }
    }
}

/// The error and its causes on one line, each cause once: many errors (tonic's, ours
/// with `#[source]`) print their cause in their own message too, which the chain would
/// repeat ("tcp connect error: tcp connect error").
fn one_line(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// The command a usage line is about, `zkpipe export solidityverifier` of
/// `zkpipe export solidityverifier <KEY> <VERIFIER>`: a subcommand's usage error points
/// to that subcommand's `--help`.
fn command_path(usage: &str) -> String {
    usage
        .split_whitespace()
        .take_while(|w| !w.starts_with(['[', '<', '-']))
        .collect::<Vec<_>>()
        .join(" ")
}
