//! HTTP next to the gRPC API: `GET /metrics` (Prometheus text), `GET /healthz` ("ok"),
//! `GET /trace` (Chrome-trace JSON of recent partitions; open it in Perfetto). With a
//! token configured, `/metrics` and `/trace` need it; `/healthz` stays open.

use crate::auth::{require_token_http, Token};
use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use axum::Router;
use zkpipe_engine::Engine;

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
                async move { ([(CONTENT_TYPE, "application/json")], t.trace_json()) }
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
