//! The HTTP listener: liveness, readiness, metrics, web endpoints and the
//! REST mapping.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use crate::metrics::Metrics;
use crate::services::Services;
use crate::Shared;

/// How long readiness waits on each backend.
const READY_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The whole HTTP router.
pub fn router(shared: Arc<Shared>, services: Services, metrics: Arc<Metrics>) -> Router {
    let local_images = shared.local_images.clone();
    let endpoints = crate::endpoints::router(shared.clone(), services.function.clone());
    let rest = crate::rest::router(services, shared.auth.clone());
    let probes = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(shared);
    let scrape = {
        let metrics = metrics.clone();
        Router::new().route(
            "/metrics",
            get(move || async move {
                (
                    [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                    metrics.render(),
                )
            }),
        )
    };
    let mut router = probes.merge(scrape).merge(endpoints).merge(rest);
    if let Some(images) = local_images {
        router = router.merge(crate::registry::router(images));
    }
    router.layer(middleware::from_fn_with_state(metrics, record))
}

/// Ready when both the record store and the hot state answer.
async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    let store = tokio::time::timeout(READY_CHECK_TIMEOUT, shared.store.ping()).await;
    let state = tokio::time::timeout(READY_CHECK_TIMEOUT, shared.state.ping()).await;
    let verdict = |result: Result<Result<(), String>, _>| match result {
        Ok(Ok(())) => "ok".to_owned(),
        Ok(Err(error)) => error,
        Err(_) => "timed out".to_owned(),
    };
    let store = verdict(store.map(|r| r.map_err(|e| e.to_string())));
    let state = verdict(state.map(|r| r.map_err(|e| e.to_string())));
    let ready = store == "ok" && state == "ok";
    let code = if ready {
        StatusCode::OK
    } else {
        tracing::warn!(%store, %state, "not ready");
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = serde_json::json!({
        "ready": ready,
        "store": { "backend": shared.store.backend(), "status": summary(&store) },
        "state": { "backend": shared.state.backend(), "status": summary(&state) },
    });
    (code, Json(body)).into_response()
}

/// Readiness is served without a token, so it says only whether a backend
/// failed, never how (the log has the details).
fn summary(verdict: &str) -> &'static str {
    if verdict == "ok" {
        "ok"
    } else {
        "unavailable"
    }
}

async fn record(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    // Route templates, not raw paths, so ids in URLs do not become series.
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "other".to_owned());
    let started = Instant::now();
    let response = next.run(request).await;
    metrics.observe(
        "http",
        &route,
        response.status().as_str(),
        started.elapsed(),
    );
    response
}
