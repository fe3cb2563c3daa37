//! What the daemon's client commands share: the server address and credentials as
//! flags, a runtime, a connection (`zkpipe-proto`'s client), and one-line messages for
//! gRPC errors.

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::Duration;
pub use zkpipe_proto::{state_name, Client};
use zkpipe_proto::{ClientOptions, ConnectError};

/// `--stream` of the commands that submit jobs (`zkpipe submit`, `zkpipe-bench loadtest`
/// and `sweep`): how a job's witnesses travel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Stream {
    /// Jobs above 4 MiB of witnesses streamed in chunks, smaller ones one message each.
    #[default]
    Auto,
    /// Every job streamed.
    Always,
    /// Every job one message (the daemon's server.max_request_bytes bounds it).
    Never,
}

impl From<Stream> for zkpipe_proto::upload::StreamMode {
    fn from(s: Stream) -> Self {
        match s {
            Stream::Auto => Self::Auto,
            Stream::Always => Self::Always,
            Stream::Never => Self::Never,
        }
    }
}

/// A witness as it travels to the daemon: packed ([`zkpipe_formats::packed_wtns`]) where
/// that halves it, as it is otherwise (circuit inputs, a witness of random values). The
/// daemon reads both. A circom witness of mostly 0s and 1s crosses ~20 times smaller: a
/// 2^25 SHA-256-valued partition as 47.6 MB instead of 1.07 GB, which took a daemon under
/// load from 0.93–0.98 to 0.66–0.69 s a proof (lab/experiments/043l-packed-wire.md).
pub fn wire_form(bytes: Vec<u8>) -> Vec<u8> {
    zkpipe_formats::packed_wtns::pack(&bytes).unwrap_or(bytes)
}

/// `--server` and credentials for client commands.
#[derive(clap::Args, Clone)]
pub struct ServerArg {
    /// The daemon's gRPC address; https://… for TLS (default: $ZKPIPE_SERVER or
    /// http://127.0.0.1:50051).
    #[arg(long, env = "ZKPIPE_SERVER", default_value = "http://127.0.0.1:50051")]
    pub server: String,
    /// The daemon's bearer token (prefer $ZKPIPE_TOKEN or --token-file: a flag shows in `ps`).
    #[arg(
        long,
        env = "ZKPIPE_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
    /// File holding the daemon's bearer token (--token takes precedence).
    #[arg(long, env = "ZKPIPE_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// PEM certificate(s) to trust for an https:// server (e.g. its self-signed one)
    /// instead of the system's roots.
    #[arg(long, env = "ZKPIPE_CA_CERT", value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
}

impl ServerArg {
    /// The client's options: the token and CA certificate read from their files.
    fn options(&self) -> Result<ClientOptions> {
        let token = match (&self.token, &self.token_file) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(f)) => Some(
                std::fs::read_to_string(f)
                    .with_context(|| format!("token file {}", f.display()))?,
            ),
            (None, None) => None,
        };
        let ca = match &self.ca_cert {
            Some(f) => Some(std::fs::read(f).with_context(|| format!("CA file {}", f.display()))?),
            None => None,
        };
        Ok(ClientOptions::new(self.server.as_str())
            .token(token)
            .ca_certificate(ca))
    }
}

/// A tokio runtime for one client command.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Connects to the daemon; the settings' errors name the flag that sets them.
pub async fn connect(s: &ServerArg) -> Result<Client> {
    zkpipe_proto::connect(&s.options()?)
        .await
        .map_err(|e| match e {
            ConnectError::CaCertificateWithoutTls { url } => {
                anyhow::anyhow!("--ca-cert is for TLS: use an https:// server address ({url})")
            }
            ConnectError::Tls(source) => anyhow::Error::new(source)
                .context("TLS settings (--ca-cert names the certificate to trust)"),
            e => e.into(),
        })
}

/// A gRPC error as one line: `<code>: <message>`. A request over the daemon's size limit
/// (tonic's own message names only the numbers) also names the setting that sets it.
pub fn rpc(s: tonic::Status) -> anyhow::Error {
    let oversize = matches!(
        s.code(),
        tonic::Code::OutOfRange | tonic::Code::ResourceExhausted
    ) && s.message().contains("message length too large");
    let hint = if oversize {
        " (the daemon's server.max_request_bytes sets the limit; default 64 MiB)"
    } else {
        ""
    };
    anyhow::anyhow!("{:?}: {}{hint}", s.code(), s.message())
}

/// Parses "30s", "500ms", "2m" (clap value parser).
pub fn duration(s: &str) -> Result<Duration, String> {
    zkpipe_server::config::parse_duration(s)
}

#[cfg(test)]
mod tests {
    use super::rpc;
    use tonic::{Code, Status};

    /// The message tonic gives a request over the limit gets the setting's name; others
    /// stay as they were.
    #[test]
    fn an_oversize_request_names_the_setting() {
        let tonic_says = "Error, decoded message length too large: found 5242893 bytes, \
                          the limit is: 4194304 bytes";
        let e = rpc(Status::new(Code::OutOfRange, tonic_says)).to_string();
        assert!(e.starts_with("OutOfRange: Error, decoded"), "{e}");
        assert!(e.contains("server.max_request_bytes"), "{e}");
        assert_eq!(e.lines().count(), 1);
        let other = rpc(Status::new(Code::InvalidArgument, "priority 99")).to_string();
        assert_eq!(other, "InvalidArgument: priority 99");
    }
}
