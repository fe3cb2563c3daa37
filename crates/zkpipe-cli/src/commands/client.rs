//! What the daemon's client commands share: the server address and credentials, a
//! runtime, a connection, and one-line messages for gRPC errors.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::time::Duration;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig};
use zkpipe_server::auth::ClientAuth;
use zkpipe_server::ProverClient;

/// A connected client: every call carries the token, if one was given.
pub type Client = ProverClient<InterceptedService<Channel, ClientAuth>>;

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
    fn auth(&self) -> Result<ClientAuth> {
        let token = match (&self.token, &self.token_file) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(f)) => Some(
                std::fs::read_to_string(f)
                    .with_context(|| format!("token file {}", f.display()))?,
            ),
            (None, None) => None,
        };
        ClientAuth::new(token.as_deref()).map_err(anyhow::Error::msg)
    }
}

/// A tokio runtime for one client command.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Connects to the daemon.
pub async fn connect(s: &ServerArg) -> Result<Client> {
    let server = &s.server;
    let url = if server.contains("://") {
        server.to_string()
    } else {
        format!("http://{server}")
    };
    let auth = s.auth()?;
    let mut endpoint = tonic::transport::Endpoint::from_shared(url.clone())
        .with_context(|| format!("bad server address {server:?}"))?
        .connect_timeout(Duration::from_secs(5))
        .initial_stream_window_size(zkpipe_server::GRPC_STREAM_WINDOW)
        .initial_connection_window_size(zkpipe_server::GRPC_CONNECTION_WINDOW);
    if url.starts_with("https://") {
        let tls = match &s.ca_cert {
            Some(f) => {
                let pem = std::fs::read(f).with_context(|| format!("CA file {}", f.display()))?;
                ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem))
            }
            None => ClientTlsConfig::new().with_native_roots(),
        };
        endpoint = endpoint
            .tls_config(tls)
            .context("TLS settings (--ca-cert names the certificate to trust)")?;
    } else if s.ca_cert.is_some() {
        bail!("--ca-cert is for TLS: use an https:// server address ({url})");
    }
    let channel = endpoint
        .connect()
        .await
        .with_context(|| format!("cannot connect to the zkpipe daemon at {url}"))?;
    Ok(ProverClient::with_interceptor(channel, auth)
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX))
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
