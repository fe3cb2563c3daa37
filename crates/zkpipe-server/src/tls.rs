//! TLS on both listeners from one PEM identity (`server.tls_cert`, `server.tls_key`):
//! tonic's rustls TLS on gRPC, and the same rustls (ring provider) in front of the HTTP
//! router, which `axum::serve` cannot do itself.

use crate::config::TlsPem;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{crypto, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// A client that has not finished its TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The rustls acceptor for `pem`; a certificate or key that cannot be used is an error
/// here, before anything listens.
pub fn acceptor(pem: &TlsPem) -> Result<TlsAcceptor, String> {
    let certs = CertificateDer::pem_slice_iter(&pem.cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("server.tls_cert: {e}"))?;
    if certs.is_empty() {
        return Err("server.tls_cert: no CERTIFICATE in the file".into());
    }
    let key =
        PrivateKeyDer::from_pem_slice(&pem.key).map_err(|e| format!("server.tls_key: {e}"))?;
    let mut cfg = ServerConfig::builder_with_provider(Arc::new(crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("server.tls_cert/tls_key: {e}"))?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}

/// tonic's TLS settings for `pem`.
pub fn grpc(pem: &TlsPem) -> tonic::transport::ServerTlsConfig {
    let id = tonic::transport::Identity::from_pem(&pem.cert, &pem.key);
    tonic::transport::ServerTlsConfig::new().identity(id)
}

/// Serves `router` over TLS on `listener` until `stop` resolves. Connections open then
/// are dropped with the runtime: its requests are short.
pub async fn serve_http(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    router: axum::Router,
    stop: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    tokio::pin!(stop);
    loop {
        let (tcp, peer) = tokio::select! {
            _ = &mut stop => return Ok(()),
            r = listener.accept() => match r {
                Ok(c) => c,
                // A connection that failed before it was accepted (reset, out of files):
                // the listener itself is still good.
                Err(e) => {
                    tracing::debug!(error = %e, "HTTP accept failed");
                    continue;
                }
            },
        };
        // As on the gRPC listener: no Nagle delay on replies.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(%peer, error = %e, "setting TCP_NODELAY");
        }
        let (acceptor, router) = (acceptor.clone(), router.clone());
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "HTTP TLS handshake failed");
                    return;
                }
                Err(_) => return,
            };
            let svc = hyper_util::service::TowerToHyperService::new(router);
            let builder =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
            let io = hyper_util::rt::TokioIo::new(tls);
            if let Err(e) = builder.serve_connection(io, svc).await {
                tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
            }
        });
    }
}
