//! `levers9-dashboard-api`: the dashboard's API server. Configured from the
//! environment only (docs/dashboard.md).

use anyhow::Context as _;
use levers9_dashboard_api::config::Config;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("LEVERS9_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let config = Config::from_env().context("dashboard API settings")?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listen on {}", config.listen))?;
    levers9_dashboard_api::serve(config, listener).await?;
    Ok(())
}
