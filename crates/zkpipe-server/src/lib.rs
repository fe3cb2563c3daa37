//! The zkpipe daemon: the engine behind a gRPC API (tonic; `proto/zkpipe.proto`,
//! package `zkpipe.v1`) and an HTTP endpoint for `/metrics`, `/healthz` and `/trace`.
//! The generated client is re-exported for the CLI and other Rust callers.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod decode;
pub mod http;
pub mod service;

/// Generated protobuf types and gRPC client/server of package `zkpipe.v1`.
#[allow(missing_docs, clippy::all)]
pub mod pb {
    tonic::include_proto!("zkpipe.v1");
}

/// The server side of `zkpipe.v1` as the daemon serves it: the same messages on the wire
/// as [`pb`], but `SubmitProofRequest.witnesses` is `Vec<Bytes>`, each witness a slice of
/// the received message rather than a copy of it (a 128 MB job was copied once more).
#[allow(missing_docs, clippy::all)]
mod wire {
    include!(concat!(env!("OUT_DIR"), "/wire/zkpipe.v1.rs"));
}

pub use config::{DaemonConfig, FileConfig};
pub use pb::prover_client::ProverClient;

use std::net::SocketAddr;
use std::sync::Arc;
use zkpipe_engine::{Devices, Engine, EngineError};

/// Why the daemon could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The engine refused its configuration.
    #[error("engine: {0}")]
    Engine(#[from] EngineError),
    /// A listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The gRPC server failed.
    #[error("gRPC server: {0}")]
    Grpc(#[from] tonic::transport::Error),
    /// The HTTP server failed.
    #[error("HTTP server: {0}")]
    Http(std::io::Error),
}

/// The addresses a running daemon bound (port 0 in the config picks free ports).
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    /// gRPC.
    pub grpc: SocketAddr,
    /// HTTP.
    pub http: SocketAddr,
}

/// HTTP/2 flow-control window per gRPC stream (one request), for both ends.
pub const GRPC_STREAM_WINDOW: u32 = 16 << 20;
/// HTTP/2 flow-control window per connection (all streams of one client), for both ends.
pub const GRPC_CONNECTION_WINDOW: u32 = 64 << 20;

/// Runs the daemon until `shutdown` resolves: binds both listeners, calls `on_bound`
/// with their addresses, serves, then shuts the engine down (cancelling unfinished jobs).
pub async fn serve(
    cfg: DaemonConfig,
    devices: Arc<dyn Devices>,
    on_bound: impl FnOnce(Bound),
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let engine = Engine::start(cfg.engine.clone(), devices)?;
    let bind = |addr| async move {
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })
    };
    let grpc = bind(cfg.server.grpc_listen).await?;
    let http = bind(cfg.server.http_listen).await?;
    let local = |l: &tokio::net::TcpListener, addr| {
        l.local_addr()
            .map_err(|source| ServeError::Bind { addr, source })
    };
    on_bound(Bound {
        grpc: local(&grpc, cfg.server.grpc_listen)?,
        http: local(&http, cfg.server.http_listen)?,
    });
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let svc = wire::prover_server::ProverServer::new(service::ProverService::new(
        engine.clone(),
        cfg.server.max_await,
    ))
    .max_decoding_message_size(cfg.server.max_request_bytes)
    .max_encoding_message_size(usize::MAX);
    // Witnesses are large (32 bytes per signal, several per job): HTTP/2's default flow-
    // control windows would make a client wait for window updates every few hundred KiB.
    let grpc_task = tonic::transport::Server::builder()
        .initial_stream_window_size(Some(GRPC_STREAM_WINDOW))
        .initial_connection_window_size(Some(GRPC_CONNECTION_WINDOW))
        .add_service(svc)
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::TcpListenerStream::new(grpc),
            stopped(stop_rx.clone()),
        );
    let http_task =
        axum::serve(http, http::router(engine.clone())).with_graceful_shutdown(stopped(stop_rx));
    let (g, h) = tokio::join!(grpc_task, async {
        http_task.await.map_err(ServeError::Http)
    });
    let e = engine.clone();
    let _ = tokio::task::spawn_blocking(move || e.shutdown()).await;
    g?;
    h?;
    Ok(())
}
