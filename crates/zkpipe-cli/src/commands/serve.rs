//! `zkpipe serve [--config zkpipe.toml] [--grpc-listen ADDR] [--http-listen ADDR]
//! [--key-dir DIR] [--state-dir DIR] [--token-file FILE] [--set KEY=VALUE]... [--backend auto|cpu|cuda]`: the daemon. Prints the
//! bound addresses on its first line of stdout, logs to stderr, and runs until SIGINT or
//! SIGTERM; then it stops in order and exits 0 after a last log line, "stopped".
//!
//! `ZKPIPE_STORE_URL` (or `store.url`) makes the daemon one of a fleet sharing a Postgres
//! job store (docs/fleet.md).
//!
//! Each override is a flag or an environment variable (flag > environment > file >
//! default); without `--config` the defaults and the overrides are the whole configuration.

use crate::backend::{devices, BackendChoice, DeviceOptions};
use anyhow::{Context, Result};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use zkpipe_server::{FileConfig, Overrides};

/// Arguments of `serve`.
#[derive(clap::Args)]
pub struct Args {
    /// The configuration file (see zkpipe.example.toml); without it, the defaults and the
    /// overrides below.
    #[arg(long, env = "ZKPIPE_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// gRPC address (overrides server.grpc_listen).
    #[arg(long, env = "ZKPIPE_GRPC_LISTEN", value_name = "ADDR")]
    grpc_listen: Option<SocketAddr>,
    /// HTTP address for /metrics, /healthz, /trace (overrides server.http_listen).
    #[arg(long, env = "ZKPIPE_HTTP_LISTEN", value_name = "ADDR")]
    http_listen: Option<SocketAddr>,
    /// Folder of .zkey files (overrides keys.dir).
    #[arg(long, env = "ZKPIPE_KEY_DIR", value_name = "DIR")]
    key_dir: Option<PathBuf>,
    /// Folder of the job store, jobs.sqlite3 (overrides server.state_dir).
    #[arg(long, env = "ZKPIPE_STATE_DIR", value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// File holding the bearer token (overrides server.token_file). $ZKPIPE_TOKEN, the
    /// token itself, takes precedence over any token file.
    #[arg(long, env = "ZKPIPE_TOKEN_FILE", value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Any other setting, `section.key=value` (repeatable; after the file, before the flags
    /// above), e.g. `--set memory.dealloc=in-place`: for A/B runs without a second file.
    /// `ZKPIPE_SET` holds more, separated by `;` (applied before these).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    settings: Vec<String>,
    /// Where the device stage runs: auto (GPU 0 if there is one), cpu, cuda.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
}

impl Args {
    fn overrides(&self) -> Result<Overrides> {
        // Only from the environment: a flag would show the secret in `ps`.
        let token = match std::env::var_os("ZKPIPE_TOKEN") {
            Some(t) if !t.is_empty() => Some(
                t.into_string()
                    .map_err(|_| anyhow::anyhow!("ZKPIPE_TOKEN is not UTF-8"))?,
            ),
            _ => None,
        };
        Ok(Overrides {
            grpc_listen: self.grpc_listen,
            http_listen: self.http_listen,
            key_dir: self.key_dir.clone(),
            state_dir: self.state_dir.clone(),
            token_file: self.token_file.clone(),
            token,
            store_url: std::env::var("ZKPIPE_STORE_URL")
                .ok()
                .filter(|u| !u.is_empty()),
            settings: std::env::var("ZKPIPE_SET")
                .unwrap_or_default()
                .split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .chain(self.settings.iter().cloned())
                .collect(),
        })
    }
}

/// Runs `serve`.
pub fn run(a: Args) -> Result<()> {
    // rayon's global pool (what runs outside the stages' own pools) under a name of its
    // own: unnamed, its threads take the name of the thread that first used it, a tokio
    // worker's, and their CPU was counted as the request path's.
    rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("zkpipe-global-{i}"))
        .build_global()
        .context("rayon's global pool")?;
    let cfg = FileConfig::load(a.config.as_deref(), &a.overrides()?)?;
    let opts = DeviceOptions::from_process(cfg.server.pinned_upload)?
        .with_device_limit(cfg.engine.device_memory_limit)
        .with_stream_batch(cfg.engine.stream_batch);
    let devices = devices(a.backend, &opts)?;
    let rt = super::client::runtime()?;
    rt.block_on(async move {
        // Registered before the first line is printed: a signal sent as soon as it is
        // read is then handled, not fatal.
        let mut term = signal(SignalKind::terminate()).context("SIGTERM handler")?;
        let mut int = signal(SignalKind::interrupt()).context("SIGINT handler")?;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let name = tokio::select! {
                    _ = term.recv() => "SIGTERM",
                    _ = int.recv() => "SIGINT",
                };
                if tx.send(name).is_err() {
                    return;
                }
            }
        });
        zkpipe_server::serve(
            cfg,
            devices,
            |b| {
                println!("zkpipe: serving grpc={} http={}", b.grpc, b.http);
                let _ = std::io::stdout().flush();
            },
            tokio_stream::wrappers::UnboundedReceiverStream::new(rx),
        )
        .await
        .context("daemon")
    })?;
    // Worker threads still blocked (a preload waiting for memory) are not waited for long.
    rt.shutdown_timeout(Duration::from_secs(2));
    tracing::info!("stopped");
    Ok(())
}
