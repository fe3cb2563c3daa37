//! What `main` of a zkpipe binary (`zkpipe`, and the lab's `zkpipe-bench`) does around its
//! commands: refuse a bad `ZKPIPE_ALLOCATOR` or `ZKPIPE_HUGE_PAGES`, parse the command line
//! (a usage error is one line), start logging, ask for huge pages where a command moves
//! witnesses, and print an error as one line with its exit status.

use crate::{allocator, huge_pages, logging};
use std::process::ExitCode;

/// `--log-level` and `--log-format`: global options of every zkpipe binary (flatten them
/// into its top-level arguments).
#[derive(clap::Args)]
pub struct LogArgs {
    /// Log level for zkpipe (error, warn, info, debug, trace, off), or a tracing filter
    /// directive such as "info,zkpipe_engine=debug".
    #[arg(long, global = true, env = "ZKPIPE_LOG", default_value = "info",
          value_name = "LEVEL", value_parser = logging::directive)]
    pub log_level: String,
    /// Log line format on stderr.
    #[arg(
        long,
        global = true,
        env = "ZKPIPE_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    pub log_format: logging::LogFormat,
}

/// A zkpipe binary's command line, run by [`main`].
pub trait Program: clap::Parser {
    /// The binary's name, which starts its one-line messages.
    const NAME: &'static str;
    /// Its logging options.
    fn log(&self) -> &LogArgs;
    /// Whether the command moves witnesses, for which the process asks glibc for huge
    /// pages ([`huge_pages`]).
    fn moves_witnesses(&self) -> bool;
    /// Runs the command.
    fn run(self) -> anyhow::Result<()>;
}

/// Runs `P` and returns the process's exit status: 0 success, 1 an error, 2 a usage error
/// or an unknown `ZKPIPE_ALLOCATOR` / `ZKPIPE_HUGE_PAGES` value (or what an
/// [`crate::Exit`] asks for). Errors are one line on stderr, `NAME: error: <what>`, or a
/// JSON error event with `--log-format json`.
pub fn main<P: Program>() -> ExitCode {
    let name = P::NAME;
    let settings = allocator::check().and_then(|a| Ok((a, huge_pages::wanted()?)));
    let (allocator, want_huge_pages) = match settings {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("{name}: error: {e}");
            return ExitCode::from(2);
        }
    };
    let program = match P::try_parse() {
        Ok(program) => program,
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
                "{name}: {} (see {} --help)",
                lines.join(" "),
                command.map_or(name.into(), command_path)
            );
            return ExitCode::from(2);
        }
    };
    let format = program.log().log_format;
    logging::init(&program.log().log_level, format);
    tracing::debug!(allocator, huge_pages = want_huge_pages, "memory settings");
    if program.moves_witnesses() {
        huge_pages::ensure(want_huge_pages);
    }
    match program.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let msg = one_line(&e);
            if format == logging::LogFormat::Json {
                tracing::error!(error = %msg, "exiting");
            } else {
                eprintln!("{name}: error: {msg}");
            }
            ExitCode::from(crate::exit_status(&e))
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
