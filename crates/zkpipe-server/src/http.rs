//! HTTP next to the gRPC API: `GET /metrics` (Prometheus text), `GET /healthz` ("ok"),
//! `GET /trace` (Chrome-trace JSON of recent partitions; open it in Perfetto). With a
//! token configured, `/metrics` and `/trace` need it; `/healthz` stays open.
//!
//! The trace is streamed: a blocking thread writes it event by event into the response
//! body in pieces of [`TRACE_PIECE`] bytes, sent as the client reads them, so that a full
//! export never holds the document (6.3 MB for 4,096 partitions) or a tree of it.

use crate::auth::{require_token_http, Token};
use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use std::io;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use zkpipe_engine::Engine;

/// The size of the pieces `/trace` is sent in.
const TRACE_PIECE: usize = 64 << 10;

/// The HTTP routes over `engine`, guarded by `token` where one is set.
pub fn router(engine: Engine, token: Option<Token>) -> Router {
    let m = engine.clone();
    let t = engine;
    let guarded = Router::new()
        .route(
            "/metrics",
            get(move || {
                let m = m.clone();
                async move {
                    (
                        [(CONTENT_TYPE, "text/plain; version=0.0.4")],
                        m.metrics_text(),
                    )
                }
            }),
        )
        .route(
            "/trace",
            get(move || {
                let t = t.clone();
                async move { trace(t) }
            }),
        );
    let guarded = match token {
        Some(token) => guarded.route_layer(axum::middleware::from_fn(move |req, next| {
            require_token_http(token.clone(), req, next)
        })),
        None => guarded,
    };
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .merge(guarded)
}

/// `/trace`'s response: its body comes from a blocking thread that writes the trace.
fn trace(engine: Engine) -> impl IntoResponse {
    // Two pieces in flight: the writer waits while the client is slow.
    let (tx, rx) = mpsc::channel(2);
    tokio::task::spawn_blocking(move || {
        let mut pieces = Pieces {
            tx,
            piece: Vec::with_capacity(TRACE_PIECE),
        };
        if let Err(e) = engine.write_trace(&mut pieces) {
            // The client is gone, or the body ends with the error (the connection breaks).
            let _ = pieces.tx.blocking_send(Err(e));
        }
    });
    (
        [(CONTENT_TYPE, "application/json")],
        Body::from_stream(ReceiverStream::new(rx)),
    )
}

/// A writer that sends what is written to a response body, in pieces.
struct Pieces {
    tx: mpsc::Sender<io::Result<Vec<u8>>>,
    piece: Vec<u8>,
}

impl Pieces {
    fn send(&mut self) -> io::Result<()> {
        let piece = std::mem::replace(&mut self.piece, Vec::with_capacity(TRACE_PIECE));
        self.tx
            .blocking_send(Ok(piece))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

impl io::Write for Pieces {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.piece.extend_from_slice(b);
        if self.piece.len() >= TRACE_PIECE {
            self.send()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.piece.is_empty() {
            return Ok(());
        }
        self.send()
    }
}
