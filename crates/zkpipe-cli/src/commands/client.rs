//! What the daemon's client commands share: the server address, a runtime, a connection,
//! and one-line messages for gRPC errors.

use anyhow::{Context, Result};
use std::time::Duration;
use zkpipe_server::ProverClient;

/// `--server` for client commands.
#[derive(clap::Args, Clone)]
pub struct ServerArg {
    /// The daemon's gRPC address (default: $ZKPIPE_SERVER or http://127.0.0.1:50051).
    #[arg(long, env = "ZKPIPE_SERVER", default_value = "http://127.0.0.1:50051")]
    pub server: String,
}

/// A tokio runtime for one client command.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Connects to the daemon.
pub async fn connect(server: &str) -> Result<ProverClient<tonic::transport::Channel>> {
    let url = if server.contains("://") {
        server.to_string()
    } else {
        format!("http://{server}")
    };
    let channel = tonic::transport::Endpoint::from_shared(url.clone())
        .with_context(|| format!("bad server address {server:?}"))?
        .connect_timeout(Duration::from_secs(5))
        .initial_stream_window_size(zkpipe_server::GRPC_STREAM_WINDOW)
        .initial_connection_window_size(zkpipe_server::GRPC_CONNECTION_WINDOW)
        .connect()
        .await
        .with_context(|| format!("cannot connect to the zkpipe daemon at {url}"))?;
    Ok(ProverClient::new(channel)
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX))
}

/// A gRPC error as one line: `<code>: <message>`.
pub fn rpc(s: tonic::Status) -> anyhow::Error {
    anyhow::anyhow!("{:?}: {}", s.code(), s.message())
}

/// Parses "30s", "500ms", "2m" (clap value parser).
pub fn duration(s: &str) -> Result<Duration, String> {
    zkpipe_server::config::parse_duration(s)
}

/// A job state's name.
pub fn state_name(s: i32) -> &'static str {
    use zkpipe_server::pb::JobState as S;
    match S::try_from(s) {
        Ok(S::Queued) => "queued",
        Ok(S::Running) => "running",
        Ok(S::Done) => "done",
        Ok(S::Failed) => "failed",
        Ok(S::Cancelled) => "cancelled",
        _ => "unknown",
    }
}
