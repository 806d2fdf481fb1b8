//! Prometheus metrics: request counts and latencies of both listeners.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

/// The controlplane's metrics registry.
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    duration: HistogramVec,
}

impl Metrics {
    /// Registers every metric; `store` and `state` name the backends in use.
    pub fn new(store: &str, state: &str) -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new("levers9_requests_total", "Requests answered, by code"),
            &["transport", "method", "code"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "levers9_request_duration_seconds",
                "Time to answer a request",
            )
            .buckets(vec![
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                1.0, 2.5,
            ]),
            &["transport", "method"],
        )?;
        let info = IntCounterVec::new(
            Opts::new(
                "levers9_build_info",
                "Version and backends of this controlplane",
            ),
            &["version", "store", "state"],
        )?;
        info.with_label_values(&[env!("CARGO_PKG_VERSION"), store, state])
            .inc();
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        registry.register(Box::new(info))?;
        Ok(Self {
            registry,
            requests,
            duration,
        })
    }

    /// Records one answered request.
    pub fn observe(&self, transport: &str, method: &str, code: &str, elapsed: Duration) {
        self.requests
            .with_label_values(&[transport, method, code])
            .inc();
        self.duration
            .with_label_values(&[transport, method])
            .observe(elapsed.as_secs_f64());
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        // Encoding into a Vec cannot fail for lack of space; a metric that
        // cannot be encoded is skipped rather than failing the scrape.
        let _ = prometheus::TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Only our own methods become label values, so random paths cannot blow
/// up the number of series.
fn grpc_method_label(path: &str) -> &str {
    if path.starts_with("/levers9.v1.") || path.starts_with("/grpc.health.v1.") {
        path
    } else {
        "other"
    }
}

/// A tower layer that records gRPC requests into [`Metrics`].
#[derive(Clone)]
pub struct GrpcMetricsLayer(pub Arc<Metrics>);

impl<S> tower::Layer<S> for GrpcMetricsLayer {
    type Service = GrpcMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        GrpcMetrics {
            inner,
            metrics: self.0.clone(),
        }
    }
}

/// The service [`GrpcMetricsLayer`] wraps around the gRPC server.
#[derive(Clone)]
pub struct GrpcMetrics<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, B, RB> tower::Service<http::Request<B>> for GrpcMetrics<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let method = grpc_method_label(request.uri().path()).to_owned();
        let started = Instant::now();
        let metrics = self.metrics.clone();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let result = answer.await;
            // Errors of unary calls come trailers-only, with the code in the
            // headers; a missing code means the call succeeded.
            let code = match &result {
                Ok(response) => response
                    .headers()
                    .get("grpc-status")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("0")
                    .to_owned(),
                Err(_) => "transport".to_owned(),
            };
            metrics.observe("grpc", &method, &code, started.elapsed());
            result
        })
    }
}
