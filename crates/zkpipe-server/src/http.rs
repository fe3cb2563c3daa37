//! HTTP next to the gRPC API: `GET /metrics` (Prometheus text), `GET /healthz` ("ok"),
//! `GET /trace` (Chrome-trace JSON of recent partitions; open it in Perfetto).

use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use axum::Router;
use zkpipe_engine::Engine;

/// The HTTP routes over `engine`.
pub fn router(engine: Engine) -> Router {
    let m = engine.clone();
    let t = engine;
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
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
        )
}
