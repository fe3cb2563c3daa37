//! Logs: `tracing` events to stderr (stdout stays for command output), as text or JSON
//! lines. `--log-level` takes a level, which applies to zkpipe's own crates (others stay
//! at warn, so a `debug` level is not drowned in HTTP/2 frames), or a full filter directive
//! such as `info,zkpipe_engine=debug`, used as given.

use std::io::IsTerminal;
use tracing_subscriber::filter::{EnvFilter, LevelFilter};

/// `--log-format`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (fields at the top level).
    Json,
}

/// The filter directive for `--log-level` (clap value parser: a bad one is a usage error).
pub fn directive(s: &str) -> Result<String, String> {
    let d = match s.trim().parse::<LevelFilter>() {
        Ok(LevelFilter::OFF) => "off".to_string(),
        Ok(level) => format!("{},zkpipe={level}", level.min(LevelFilter::WARN)),
        Err(_) => s.to_string(),
    };
    EnvFilter::builder()
        .parse(&d)
        .map(|_| d)
        .map_err(|e| format!("not a level or filter directive: {e}"))
}

/// Installs the subscriber for the whole process.
pub fn init(directive: &str, format: LogFormat) {
    // `directive` was checked by the value parser.
    let filter = EnvFilter::builder()
        .parse(directive)
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => fmt.with_ansi(std::io::stderr().is_terminal()).try_init(),
        LogFormat::Json => fmt
            .json()
            .flatten_event(true)
            .with_span_list(false)
            .try_init(),
    };
}
