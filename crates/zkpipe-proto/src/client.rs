//! A connection to a zkpipe daemon: [`connect`] with [`ClientOptions`] (the server's
//! address, a bearer token, a CA certificate for `https://`, timeouts, message-size
//! limits) gives a [`Client`], the generated client with the token on every call.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use zkpipe_proto::{connect, pb, ClientOptions};
//! let mut client = connect(&ClientOptions::new("127.0.0.1:50051")).await?;
//! let status = client.get_status(pb::GetStatusRequest {}).await?.into_inner();
//! println!("{} partitions pending", status.pending_partitions);
//! # Ok(()) }
//! ```

use crate::pb::prover_client::ProverClient;
use crate::{ClientAuth, InvalidToken, GRPC_CONNECTION_WINDOW, GRPC_STREAM_WINDOW};
use std::time::Duration;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

/// A connected client: every call carries the token, if one was given.
pub type Client = ProverClient<InterceptedService<Channel, ClientAuth>>;

/// How to reach a daemon. [`ClientOptions::new`] sets the defaults; the setters change
/// one each.
#[derive(Clone)]
pub struct ClientOptions {
    server: String,
    token: Option<String>,
    ca_certificate: Option<Vec<u8>>,
    connect_timeout: Duration,
    timeout: Option<Duration>,
    max_message_bytes: usize,
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("server", &self.server)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("ca_certificate", &self.ca_certificate.is_some())
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("max_message_bytes", &self.max_message_bytes)
            .finish()
    }
}

impl ClientOptions {
    /// The daemon at `server`: `host:port` (plain HTTP/2), `http://host:port`, or
    /// `https://host:port` (TLS, trusting the system's roots unless
    /// [`ca_certificate`](Self::ca_certificate) names one).
    ///
    /// Defaults: no token, connect timeout 5 s, no per-call timeout (a wait takes as long
    /// as its request's `timeout_ms`; the daemon caps it), messages of any size both ways
    /// (the daemon's `server.max_request_bytes` limits what it accepts).
    pub fn new(server: impl Into<String>) -> Self {
        Self {
            server: server.into(),
            token: None,
            ca_certificate: None,
            connect_timeout: Duration::from_secs(5),
            timeout: None,
            max_message_bytes: usize::MAX,
        }
    }

    /// The daemon's bearer token (surrounding whitespace is dropped).
    pub fn token(mut self, token: Option<String>) -> Self {
        self.token = token;
        self
    }

    /// PEM certificate(s) to trust instead of the system's roots (e.g. a daemon's
    /// self-signed one); only for an `https://` server.
    pub fn ca_certificate(mut self, pem: Option<Vec<u8>>) -> Self {
        self.ca_certificate = pem;
        self
    }

    /// How long to wait for the connection (default 5 s).
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = d;
        self
    }

    /// How long any one call may take, or `None` for no limit (the default). A call past
    /// it fails with CANCELLED.
    pub fn timeout(mut self, d: Option<Duration>) -> Self {
        self.timeout = d;
        self
    }

    /// The largest message sent or received, in bytes (default: no limit).
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// The server's URL: the address as given, with `http://` in front when it has no
    /// scheme.
    pub fn url(&self) -> String {
        if self.server.contains("://") {
            self.server.clone()
        } else {
            format!("http://{}", self.server)
        }
    }

    /// The endpoint to connect to: address, TLS and timeouts checked, nothing dialled.
    fn endpoint(&self) -> Result<Endpoint, ConnectError> {
        let url = self.url();
        let mut endpoint = Endpoint::from_shared(url.clone())
            .map_err(|source| ConnectError::Address {
                server: self.server.clone(),
                source,
            })?
            .connect_timeout(self.connect_timeout)
            .initial_stream_window_size(GRPC_STREAM_WINDOW)
            .initial_connection_window_size(GRPC_CONNECTION_WINDOW);
        if let Some(t) = self.timeout {
            endpoint = endpoint.timeout(t);
        }
        if url.starts_with("https://") {
            let tls = match &self.ca_certificate {
                Some(pem) => ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)),
                None => ClientTlsConfig::new().with_native_roots(),
            };
            endpoint = endpoint.tls_config(tls).map_err(ConnectError::Tls)?;
        } else if self.ca_certificate.is_some() {
            return Err(ConnectError::CaCertificateWithoutTls { url });
        }
        Ok(endpoint)
    }
}

/// Why [`connect`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The address is not a URI.
    #[error("bad server address {server:?}")]
    Address {
        /// The address as given.
        server: String,
        /// Why.
        source: tonic::transport::Error,
    },
    /// The token cannot travel in a header.
    #[error(transparent)]
    Token(#[from] InvalidToken),
    /// A CA certificate was given for a server without TLS.
    #[error("a CA certificate is for TLS: use an https:// server address ({url})")]
    CaCertificateWithoutTls {
        /// The server's URL.
        url: String,
    },
    /// The TLS settings (the CA certificate) cannot be used.
    #[error("TLS settings")]
    Tls(#[source] tonic::transport::Error),
    /// The daemon cannot be reached: nothing listens, the TLS handshake failed, or the
    /// connect timeout passed.
    #[error("cannot connect to the zkpipe daemon at {url}")]
    Connect {
        /// The server's URL.
        url: String,
        /// Why.
        source: tonic::transport::Error,
    },
}

/// Connects to the daemon `options` names.
pub async fn connect(options: &ClientOptions) -> Result<Client, ConnectError> {
    let auth = ClientAuth::new(options.token.as_deref())?;
    let channel = options
        .endpoint()?
        .connect()
        .await
        .map_err(|source| ConnectError::Connect {
            url: options.url(),
            source,
        })?;
    Ok(ProverClient::with_interceptor(channel, auth)
        .max_decoding_message_size(options.max_message_bytes)
        .max_encoding_message_size(options.max_message_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_without_a_scheme_is_plain_http() {
        assert_eq!(ClientOptions::new("h:1").url(), "http://h:1");
        assert_eq!(ClientOptions::new("https://h:1").url(), "https://h:1");
        assert!(ClientOptions::new("h:1").endpoint().is_ok());
    }

    #[test]
    fn bad_settings_fail_before_dialling() {
        let e = ClientOptions::new("bad address").endpoint().unwrap_err();
        assert!(matches!(e, ConnectError::Address { .. }), "{e}");
        assert_eq!(e.to_string(), "bad server address \"bad address\"");
        let e = ClientOptions::new("127.0.0.1:1")
            .ca_certificate(Some(b"pem".to_vec()))
            .endpoint()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "a CA certificate is for TLS: use an https:// server address (http://127.0.0.1:1)"
        );
        let o = ClientOptions::new("h:1").token(Some("secret-token".into()));
        assert!(!format!("{o:?}").contains("secret"), "{o:?}");
    }

    #[tokio::test]
    async fn a_token_that_cannot_travel_and_a_closed_port_are_typed_errors() {
        let o = ClientOptions::new("127.0.0.1:1").token(Some("two\nlines".into()));
        assert!(matches!(connect(&o).await, Err(ConnectError::Token(_))));
        // Port 1 on loopback: nothing listens there (tcpmux is long gone).
        let o = ClientOptions::new("127.0.0.1:1").connect_timeout(Duration::from_secs(2));
        match connect(&o).await {
            Err(e @ ConnectError::Connect { .. }) => {
                assert_eq!(
                    e.to_string(),
                    "cannot connect to the zkpipe daemon at http://127.0.0.1:1"
                );
            }
            other => panic!("expected a connect error, got {:?}", other.map(|_| ())),
        }
    }
}
