//! `zkpipe serve --config zkpipe.toml [--backend auto|cpu|cuda]`: the daemon. Prints the
//! bound addresses on its first line of stdout and runs until SIGINT or SIGTERM.

use crate::backend::{devices, BackendChoice};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;
use zkpipe_server::FileConfig;

/// Arguments of `serve`.
#[derive(clap::Args)]
pub struct Args {
    /// The configuration file (see zkpipe.example.toml).
    #[arg(long)]
    config: PathBuf,
    /// Where the device stage runs: auto (GPU 0 if there is one), cpu, cuda.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
}

/// Runs `serve`.
pub fn run(a: Args) -> Result<()> {
    let cfg = FileConfig::load(&a.config)?;
    let devices = devices(a.backend)?;
    let rt = super::client::runtime()?;
    rt.block_on(async move {
        let shutdown = async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
            }
        };
        zkpipe_server::serve(
            cfg,
            devices,
            |b| {
                println!("zkpipe: serving grpc={} http={}", b.grpc, b.http);
                let _ = std::io::stdout().flush();
            },
            shutdown,
        )
        .await
        .context("daemon")
    })
}
