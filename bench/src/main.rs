//! Benchmarks, printed as markdown tables. `levers9-bench` (or
//! `levers9-bench auth`) measures the spine; `levers9-bench containers`
//! measures container starts (see `containers.rs`); `levers9-bench
//! scheduling` the scheduler at fleet scale (see `scheduling.rs`).
//!
//! The spine:
//! - the authenticated unary gRPC round trip on loopback (GetWorkspace with a
//!   bearer token), one caller and 16 concurrent callers;
//! - the token check itself, with the cache warm.
//!
//! Runs on the embedded pair always, and on Postgres + Redis when
//! `LEVERS9_TEST_DATABASE_URL` and `LEVERS9_TEST_REDIS_URL` are set (as
//! `make bench` does). `LEVERS9_BENCH_CALLS` sets the number of calls.

use std::sync::Arc;
use std::time::{Duration, Instant};

mod containers;
mod scheduling;

use anyhow::{Context, Result};
use levers9_api::v1::workspace_service_client::WorkspaceServiceClient;
use levers9_api::v1::{AuthorizeRequest, GetWorkspaceRequest};
use levers9_config::Config;
use levers9_controlplane::auth::Authenticator;
use levers9_controlplane::backends;
use tonic::transport::Channel;

const SECRET: &str = "bench-bootstrap-secret";
const CONCURRENT_CALLERS: usize = 16;
/// Untimed calls before each timed round trip series.
const WARM_UP_CALLS: usize = 500;

/// The client side runs on this thread's own single-threaded runtime and the
/// controlplane on a separate multi-threaded one, as two processes would.
fn main() -> Result<()> {
    if std::env::args().nth(1).as_deref() == Some("scheduling") {
        return tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(scheduling::run());
    }
    if std::env::args().nth(1).as_deref() == Some("containers") {
        return tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(containers::run());
    }
    let server = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    client.block_on(run(server.handle()))
}

async fn run(server: &tokio::runtime::Handle) -> Result<()> {
    let calls: usize = std::env::var("LEVERS9_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    println!("| backend | measure | calls | p50 | p99 | calls/s |");
    println!("|---|---|---|---|---|---|");
    let dir = tempfile::tempdir()?;
    let mut setups = vec![("sqlite+memory", embedded_config(dir.path()))];
    if let Some(config) = servers_config().await? {
        setups.push(("postgres+redis", config));
    }
    for (name, config) in setups {
        bench_backend(server, name, config, calls).await?;
    }
    Ok(())
}

fn embedded_config(dir: &std::path::Path) -> Config {
    let mut config = base_config();
    config.controlplane.data_dir = dir.display().to_string();
    config
}

fn base_config() -> Config {
    let mut config = Config::default();
    config.controlplane.bind_address = "127.0.0.1".into();
    config.controlplane.grpc.port = 0;
    config.controlplane.http.port = 0;
    config.controlplane.auth.bootstrap_secret = levers9_config::Secret::new(SECRET);
    config
}

/// A fresh database on the test Postgres, and the test Redis.
async fn servers_config() -> Result<Option<Config>> {
    let (Ok(pg), Ok(redis)) = (
        std::env::var("LEVERS9_TEST_DATABASE_URL"),
        std::env::var("LEVERS9_TEST_REDIS_URL"),
    ) else {
        return Ok(None);
    };
    let name = format!("l9bench_{}", std::process::id());
    let status = std::process::Command::new("psql")
        .args([pg.as_str(), "-q", "-c", &format!("CREATE DATABASE {name}")])
        .status()
        .context("psql")?;
    anyhow::ensure!(status.success(), "cannot create the bench database");
    let rest = pg.split("://").nth(1).context("url scheme")?;
    let (user, rest) = rest.split_once('@').context("url user")?;
    let (host, port) = rest
        .split('/')
        .next()
        .and_then(|hp| hp.rsplit_once(':'))
        .context("url host:port")?;
    let mut config = base_config();
    let db = &mut config.database;
    db.postgres.host = host.into();
    db.postgres.port = port.parse()?;
    db.postgres.user = user.into();
    db.postgres.name = name.clone();
    db.redis.addrs = vec![redis
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .into()];
    db.redis.key_prefix = format!("{name}:");
    Ok(Some(config))
}

async fn bench_backend(
    server: &tokio::runtime::Handle,
    name: &str,
    config: Config,
    calls: usize,
) -> Result<()> {
    let running = server
        .spawn(levers9_controlplane::start(config.clone()))
        .await??;
    let channel = Channel::from_shared(format!("http://{}", running.grpc_addr))?
        .timeout(Duration::from_secs(10))
        .connect()
        .await?;
    let token = bootstrap(channel.clone()).await?;

    // Baseline: the unauthenticated health check on the same connection
    // shows what the transport alone costs.
    // The same 500 untimed calls as GetWorkspace gets before it is timed.
    let health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    for _ in 0..WARM_UP_CALLS {
        health
            .clone()
            .check(tonic_health::pb::HealthCheckRequest::default())
            .await?;
    }
    let mut samples = Vec::with_capacity(calls);
    let started = Instant::now();
    for _ in 0..calls {
        let t = Instant::now();
        health
            .clone()
            .check(tonic_health::pb::HealthCheckRequest::default())
            .await?;
        samples.push(t.elapsed());
    }
    report(
        name,
        "gRPC health Check (baseline, no token)",
        &mut samples,
        started.elapsed(),
    );

    let client = WorkspaceServiceClient::new(channel.clone());
    for _ in 0..WARM_UP_CALLS {
        get_workspace(client.clone(), &token).await?;
    }
    let mut samples = Vec::with_capacity(calls);
    let started = Instant::now();
    for _ in 0..calls {
        let t = Instant::now();
        get_workspace(client.clone(), &token).await?;
        samples.push(t.elapsed());
    }
    report(
        name,
        "gRPC GetWorkspace, 1 caller",
        &mut samples,
        started.elapsed(),
    );

    let started = Instant::now();
    let per_caller = calls / CONCURRENT_CALLERS;
    let tasks: Vec<_> = (0..CONCURRENT_CALLERS)
        .map(|_| {
            let client = client.clone();
            let token = token.clone();
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(per_caller);
                for _ in 0..per_caller {
                    let t = Instant::now();
                    get_workspace(client.clone(), &token).await?;
                    samples.push(t.elapsed());
                }
                anyhow::Ok(samples)
            })
        })
        .collect();
    let mut samples = Vec::with_capacity(calls);
    for task in tasks {
        samples.extend(task.await??);
    }
    let label = format!("gRPC GetWorkspace, {CONCURRENT_CALLERS} callers");
    report(name, &label, &mut samples, started.elapsed());

    // The token check alone, over the same store, cache warm.
    let store = backends::open_store(&config).await?.records;
    let auth = Arc::new(Authenticator::new(store, Duration::from_secs(5)));
    auth.authenticate_secret(&token).await?;
    let mut samples = Vec::with_capacity(calls);
    let started = Instant::now();
    for _ in 0..calls {
        let t = Instant::now();
        auth.authenticate_secret(&token).await?;
        samples.push(t.elapsed());
    }
    report(
        name,
        "token check, cache warm",
        &mut samples,
        started.elapsed(),
    );

    server.spawn(running.stop()).await?;
    Ok(())
}

async fn bootstrap(channel: Channel) -> Result<String> {
    bootstrap_with(channel, SECRET).await
}

/// The first admin token of a fresh controlplane started with `secret`.
pub(crate) async fn bootstrap_with(channel: Channel, secret: &str) -> Result<String> {
    let mut request = tonic::Request::new(AuthorizeRequest {});
    request
        .metadata_mut()
        .insert(levers9_api::BOOTSTRAP_SECRET_METADATA, secret.parse()?);
    let answer = levers9_api::v1::auth_service_client::AuthServiceClient::new(channel)
        .authorize(request)
        .await?
        .into_inner();
    Ok(answer.new_token)
}

async fn get_workspace(mut client: WorkspaceServiceClient<Channel>, token: &str) -> Result<()> {
    let mut request = tonic::Request::new(GetWorkspaceRequest {});
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse()?);
    client.get_workspace(request).await?;
    Ok(())
}

pub(crate) fn report(backend: &str, measure: &str, samples: &mut [Duration], total: Duration) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    println!(
        "| {backend} | {measure} | {} | {:.1} µs | {:.1} µs | {:.0} |",
        samples.len(),
        at(0.50).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        samples.len() as f64 / total.as_secs_f64()
    );
}
