//! The zkpipe daemon: the engine behind a gRPC API (tonic; the protocol, package
//! `zkpipe.v1`, is `zkpipe-proto`'s, and [`protocol`] maps it to the engine's types) and an
//! HTTP endpoint for `/metrics`, `/healthz` and `/trace`. The protocol's types and client
//! are re-exported ([`pb`], [`ProverClient`]); a program that only talks to a daemon
//! depends on `zkpipe-proto` instead.
//!
//! Operations: a bearer token guards every call where one is configured (required beyond
//! loopback), TLS serves both listeners where a certificate is, and a signal stops the
//! daemon in order: no new jobs, unfinished ones get a grace period, then the engine
//! stops (see [`serve`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
pub mod config;
pub mod decode;
pub mod http;
pub mod protocol;
pub mod server_timing;
pub mod service;
pub mod tls;
pub mod upload;

pub use config::{DaemonConfig, FileConfig, Overrides};
pub use zkpipe_proto::pb;
pub use zkpipe_proto::pb::prover_client::ProverClient;
pub use zkpipe_proto::{GRPC_CONNECTION_WINDOW, GRPC_MAX_FRAME, GRPC_STREAM_WINDOW};

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_stream::{Stream, StreamExt};
use zkpipe_engine::{Devices, Engine, EngineError, JobStore, StoreError};
use zkpipe_store::{PgStore, SqliteOptions, SqliteStore};

/// Why the daemon could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The engine refused its configuration.
    #[error("engine: {0}")]
    Engine(#[source] EngineError),
    /// A listen address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The TLS certificate or key cannot be used.
    #[error("TLS: {0}")]
    Tls(String),
    /// The gRPC server failed.
    #[error("gRPC server")]
    Grpc(#[source] tonic::transport::Error),
    /// The HTTP server failed.
    #[error("HTTP server")]
    Http(#[source] std::io::Error),
    /// A listener's task panicked (a bug).
    #[error("the {0} listener panicked")]
    Panicked(&'static str),
    /// The job store could not be opened.
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// The addresses a running daemon bound (port 0 in the config picks free ports).
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    /// gRPC.
    pub grpc: SocketAddr,
    /// HTTP.
    pub http: SocketAddr,
}

/// How long the listeners may take to close their connections once the engine stopped.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs the daemon until the first item of `signals` (the name of a signal): binds both
/// listeners, calls `on_bound` with their addresses, and serves. Before that it opens the
/// job store in the state directory and takes back the jobs an earlier run left. Then it stops in
/// order: new jobs are refused (UNAVAILABLE), unfinished ones may run for `shutdown_grace` (a
/// second signal cuts it short), the engine shuts down (what is left stays in the job store
/// and runs at the next start), and the listeners close.
pub async fn serve<S>(
    cfg: DaemonConfig,
    devices: Arc<dyn Devices>,
    on_bound: impl FnOnce(Bound),
    mut signals: S,
) -> Result<(), ServeError>
where
    S: Stream<Item = &'static str> + Unpin,
{
    let server = cfg.server;
    let tls = match &server.tls {
        Some(pem) => Some((tls::acceptor(pem).map_err(ServeError::Tls)?, tls::grpc(pem))),
        None => None,
    };
    // Opening the store creates the state directory: only for a configuration the engine
    // will start with (checked again there), so that a refused start leaves nothing behind.
    cfg.engine
        .validate()
        .map_err(|e| ServeError::Engine(EngineError::Config(e)))?;
    if !cfg.engine.key_dir.is_dir() {
        let dir = cfg.engine.key_dir.display();
        return Err(ServeError::Engine(EngineError::Config(format!(
            "key directory {dir} does not exist"
        ))));
    }
    let store: Arc<dyn JobStore> = match &server.store {
        Some(o) => {
            let store = PgStore::connect(o)?;
            tracing::info!(daemon = %o.daemon, "jobs in the shared store (a fleet)");
            Arc::new(store)
        }
        None => Arc::new(SqliteStore::open_with(
            &server.state_dir,
            &SqliteOptions {
                inline_max: server.witness_inline_max,
                witness_sync: server.witness_sync,
                ..SqliteOptions::default()
            },
        )?),
    };
    let engine = Engine::start_with(cfg.engine, devices, store).map_err(ServeError::Engine)?;
    let bind = |addr| async move {
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })
    };
    let grpc = bind(server.grpc_listen).await?;
    let http = bind(server.http_listen).await?;
    let local = |l: &tokio::net::TcpListener, addr| {
        l.local_addr()
            .map_err(|source| ServeError::Bind { addr, source })
    };
    let bound = Bound {
        grpc: local(&grpc, server.grpc_listen)?,
        http: local(&http, server.http_listen)?,
    };
    on_bound(bound);
    tracing::info!(grpc = %bound.grpc, http = %bound.http, tls = tls.is_some(), token = server.token.is_some(), "serving");
    let remote = !(bound.grpc.ip().is_loopback() && bound.http.ip().is_loopback());
    if remote && tls.is_none() {
        tracing::warn!("serving beyond loopback without TLS: the token and the witnesses cross the network in clear text (set server.tls_cert and server.tls_key)");
    }

    let accepting = Arc::new(AtomicBool::new(true));
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let svc = zkpipe_proto::server::prover_server::ProverServer::new(
        service::ProverService::new(engine.clone(), server.max_await, Arc::clone(&accepting))
            .max_inflight_bytes(server.max_inflight_request_bytes)
            .stream_idle_timeout(server.stream_idle_timeout),
    )
    .max_decoding_message_size(server.max_request_bytes)
    .max_encoding_message_size(usize::MAX);
    let svc = tonic::service::interceptor::InterceptedService::new(
        svc,
        server_timing::StampArrival(auth::RequireToken(server.token.clone())),
    );
    // Witnesses are large (32 bytes per signal, several per job): HTTP/2's default flow-
    // control windows would make a client wait for window updates every few hundred KiB,
    // and its 16 KiB frames would cut a streamed 4 MiB chunk into 256.
    let mut builder = tonic::transport::Server::builder()
        .initial_stream_window_size(Some(GRPC_STREAM_WINDOW))
        .initial_connection_window_size(Some(GRPC_CONNECTION_WINDOW))
        .max_frame_size(Some(GRPC_MAX_FRAME));
    let mut http_tls = None;
    if let Some((acceptor, grpc_tls)) = tls {
        builder = builder.tls_config(grpc_tls).map_err(ServeError::Grpc)?;
        http_tls = Some(acceptor);
    }
    // TCP_NODELAY on every accepted connection: with Nagle's algorithm on, a reply's
    // frames written after its first wait for the client's delayed ACK (~40 ms on Linux);
    // that is a constant ~45 ms of every job's latency (lab/experiments/026-request-path.md). tonic
    // sets it only on listeners it binds itself.
    let incoming =
        tonic::transport::server::TcpIncoming::from_listener(grpc, true, None).map_err(|e| {
            ServeError::Bind {
                addr: bound.grpc,
                source: std::io::Error::other(e),
            }
        })?;
    let mut grpc_task = tokio::spawn(
        builder
            .add_service(svc)
            .serve_with_incoming_shutdown(incoming, stopped(stop_rx.clone())),
    );
    let router = http::router(engine.clone(), server.token.clone());
    let http_stop = stopped(stop_rx);
    let mut http_task = tokio::spawn(async move {
        match http_tls {
            Some(acceptor) => tls::serve_http(http, acceptor, router, http_stop).await,
            None => {
                axum::serve(http, router)
                    .tcp_nodelay(true)
                    .with_graceful_shutdown(http_stop)
                    .await
            }
        }
    });

    // Serve until a signal, or until a listener fails.
    let failed = tokio::select! {
        s = signals.next() => {
            tracing::info!(signal = s.unwrap_or("end of signals"), "shutting down: no new jobs");
            None
        }
        r = &mut grpc_task => Some(grpc_result(r)),
        r = &mut http_task => Some(http_result(r)),
    };
    accepting.store(false, Ordering::Release);
    if failed.is_none() {
        drain(&engine, server.shutdown_grace, &mut signals).await;
    }
    let e = engine.clone();
    let _ = tokio::task::spawn_blocking(move || e.shutdown()).await;
    let _ = stop_tx.send(true);
    if let Some(r) = failed {
        return r;
    }
    // Awaits of jobs left unfinished have returned (UNAVAILABLE); a listener that still will not
    // close is dropped with the runtime.
    let closed = tokio::time::timeout(CLOSE_TIMEOUT, async {
        let g = grpc_result(grpc_task.await);
        let h = http_result(http_task.await);
        g.and(h)
    })
    .await;
    closed.unwrap_or_else(|_| {
        tracing::warn!("listeners did not close within {CLOSE_TIMEOUT:?}");
        Ok(())
    })
}

/// Waits until no partition is pending, for at most `grace` or until the next signal.
async fn drain<S>(engine: &Engine, grace: Duration, signals: &mut S)
where
    S: Stream<Item = &'static str> + Unpin,
{
    let deadline = Instant::now() + grace;
    loop {
        let pending = engine.pending_partitions();
        if pending == 0 {
            return;
        }
        if Instant::now() >= deadline {
            tracing::warn!(pending, grace = ?grace, "shutdown grace period over: unfinished jobs stay in the job store for the next start");
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            Some(s) = signals.next() => {
                tracing::warn!(signal = s, pending, "second signal: unfinished jobs stay in the job store for the next start");
                return;
            }
        }
    }
}

fn grpc_result(
    r: Result<Result<(), tonic::transport::Error>, tokio::task::JoinError>,
) -> Result<(), ServeError> {
    match r {
        Ok(r) => r.map_err(ServeError::Grpc),
        Err(_) => Err(ServeError::Panicked("gRPC")),
    }
}

fn http_result(r: Result<std::io::Result<()>, tokio::task::JoinError>) -> Result<(), ServeError> {
    match r {
        Ok(r) => r.map_err(ServeError::Http),
        Err(_) => Err(ServeError::Panicked("HTTP")),
    }
}
