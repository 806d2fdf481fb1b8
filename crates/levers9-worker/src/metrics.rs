//! The worker's `/metrics` listener: Prometheus text of its counters (the
//! container security violations), for operators deciding when to
//! enforce.

use std::net::SocketAddr;

use axum::routing::get;
use axum::Router;

use crate::security::SecurityMetrics;

/// Binds `address` and serves `GET /metrics` from `metrics` in the
/// background until the worker exits.
///
/// # Errors
/// The address cannot be bound.
pub async fn serve(address: SocketAddr, metrics: SecurityMetrics) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    let app = Router::new().route(
        "/metrics",
        get(move || {
            let metrics = metrics.clone();
            async move {
                (
                    [("content-type", "text/plain; version=0.0.4")],
                    metrics.render(),
                )
            }
        }),
    );
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::warn!(%error, "the metrics listener stopped");
        }
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::{Check, Subject};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn the_violation_counter_is_scraped() {
        let metrics = SecurityMetrics::default();
        metrics.record(
            Check::ContainerServerAuth,
            "observe",
            &Subject {
                pool: "p".into(),
                ..Subject::default()
            },
            "hello without the container's credential",
        );
        let address = serve("127.0.0.1:0".parse().expect("address"), metrics)
            .await
            .expect("binds");
        let mut stream = tokio::net::TcpStream::connect(address)
            .await
            .expect("connects");
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("request");
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .await
            .expect("response");
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(
            response.contains(
                "levers9_container_security_violations_total{check=\"container_server_auth\",mode=\"observe\",pool=\"p\"} 1"
            ),
            "{response}"
        );
    }
}
