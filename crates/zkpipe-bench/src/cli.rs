//! `zkpipe-bench`'s command line: the lab's commands, run by zkpipe's shared
//! [`zkpipe_cli::program::main`] (the same logging options, one-line errors and exit
//! statuses as `zkpipe`).

use crate::commands;
use clap::{Parser, Subcommand};
use zkpipe_cli::program::{LogArgs, Program};

#[derive(Parser)]
#[command(
    name = "zkpipe-bench",
    version = zkpipe_cli::VERSION,
    about = "zkpipe's lab: measure proofs (bench), load a daemon (loadtest), sweep daemon \
        configurations (sweep)",
    after_help = "Exit status: 0 success; 1 an error or a failed job; 2 a usage error."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    log: LogArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Prove repeatedly with the key resident; per-stage min/median/mean/max, A/B compare.
    Bench(commands::bench::Args),
    /// Load test a running daemon: c clients × j jobs × p partitions.
    Loadtest(commands::loadtest::Args),
    /// Concurrency sweep, with interleaved A/B of daemon configurations it starts itself.
    Sweep(commands::sweep::Args),
}

impl Program for Cli {
    const NAME: &'static str = "zkpipe-bench";

    fn log(&self) -> &LogArgs {
        &self.log
    }

    fn moves_witnesses(&self) -> bool {
        matches!(self.command, Command::Loadtest(_) | Command::Sweep(_))
    }

    fn run(self) -> anyhow::Result<()> {
        match self.command {
            Command::Bench(a) => commands::bench::run(a),
            Command::Loadtest(a) => commands::loadtest::run(a),
            Command::Sweep(a) => commands::sweep::run(a),
        }
    }
}
