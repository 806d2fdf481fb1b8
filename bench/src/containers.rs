//! Container start: request → process running (its first output) and →
//! exit reported, through a real controlplane and worker, image cached;
//! against a raw `runc run` / `runsc run` of the same root filesystem in the
//! same run. Needs root, runc, runsc and `LEVERS9_TEST_REGISTRY` (as
//! `make bench-containers` provides).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use levers9_api::v1::{
    container_log_event, container_service_client::ContainerServiceClient,
    token_service_client::TokenServiceClient, worker_service_client::WorkerServiceClient,
    ContainerState, CreateTokenRequest, ListWorkersRequest, RunContainerRequest,
    StreamContainerLogsRequest,
};
use levers9_api::Words;
use levers9_worker::{RuntimeKind, WorkerOptions};
use tokio::io::AsyncReadExt;
use tonic::transport::Channel;

const RUNS: usize = 20;

fn authed<T>(message: T, token: &str) -> Result<tonic::Request<T>> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse()?);
    Ok(request)
}

pub async fn run() -> Result<()> {
    let registry = std::env::var("LEVERS9_TEST_REGISTRY")
        .context("LEVERS9_TEST_REGISTRY is not set: run with scripts/test-servers.sh")?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/push-busybox-image.sh");
    let pushed = std::process::Command::new(script)
        .arg(format!("{registry}/levers9-bench/busybox:1"))
        .output()?;
    anyhow::ensure!(pushed.status.success(), "cannot push the bench image");
    let image = String::from_utf8(pushed.stdout)?.trim().to_owned();

    println!("| runtime | measure | runs | p50 | p90 |");
    println!("|---|---|---|---|---|");
    for runtime in [RuntimeKind::Runc, RuntimeKind::Gvisor] {
        bench_runtime(runtime, &image).await?;
    }
    Ok(())
}

async fn bench_runtime(runtime: RuntimeKind, image: &str) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let mut config = levers9_config::Config::default();
    config.controlplane.bind_address = "127.0.0.1".into();
    config.controlplane.grpc.port = 0;
    config.controlplane.http.port = 0;
    config.controlplane.data_dir = dir.path().join("data").display().to_string();
    config.controlplane.auth.bootstrap_secret = levers9_config::Secret::new("bench");
    let cp = levers9_controlplane::start(config).await?;
    let channel = Channel::from_shared(format!("http://{}", cp.grpc_addr))?
        .connect()
        .await?;
    let admin = super::bootstrap_with(channel.clone(), "bench").await?;
    let worker_token = TokenServiceClient::new(channel.clone())
        .create_token(authed(
            CreateTokenRequest {
                token_type: "worker".into(),
                description: "bench".into(),
            },
            &admin,
        )?)
        .await?
        .into_inner()
        .secret;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let options = WorkerOptions {
        controlplane: levers9_api::dial::Controlplane::new(cp.grpc_addr.to_string(), false),
        token: worker_token,
        pool: "default".into(),
        worker_id: "bench-worker".into(),
        hostname: "bench".into(),
        capacity: levers9_worker::detect_capacity(),
        runtime,
        state_dir: dir.path().join("worker"),
        insecure_registries: Vec::new(),
        image_cache_bytes: 1 << 30,
        registry_credentials: Default::default(),
        // The shipped hardening, as a real worker runs it.
        config: levers9_config::WorkerConfig::default(),
        pool_origin: Default::default(),
        metrics_address: None,
        // The benchmark stops its worker with nothing left running.
        drain_grace: std::time::Duration::ZERO,
        volumes: levers9_volumes::Volumes::new(
            &levers9_config::Config::default(),
            &dir.path().join("worker"),
            levers9_volumes::FormatMode::CreateOnly,
        ),
        storage: levers9_config::StorageConfig::default(),
    };
    let worker = tokio::spawn(levers9_worker::run(options, stopped));
    let deadline = Instant::now() + Duration::from_secs(30);
    while WorkerServiceClient::new(channel.clone())
        .list_workers(authed(ListWorkersRequest {}, &admin)?)
        .await?
        .into_inner()
        .workers
        .is_empty()
    {
        anyhow::ensure!(Instant::now() < deadline, "the worker never registered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    run_once(&channel, &admin, image).await?; // pulls and caches the image
    let (mut to_output, mut to_exit) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let (output, exit) = run_once(&channel, &admin, image).await?;
        to_output.push(output);
        to_exit.push(exit);
    }
    let name = runtime.as_str();
    report(name, "levers9: request → first output", &mut to_output);
    report(name, "levers9: request → exit reported", &mut to_exit);

    let images = levers9_image::ImageStore::open(levers9_image::ImageStoreConfig::new(
        dir.path().join("raw-images"),
    ))?;
    let pulled = images.pull(image).await?;
    let raw_id = levers9_image::ContainerId::parse("raw-bench")?;
    let rootfs = images.prepare_rootfs(&pulled, &raw_id).await?;
    // One untimed raw run first, as levers9 gets its image-pulling one.
    raw_run(runtime, &rootfs.path, &dir.path().join("raw"), RUNS).await?;
    let (mut raw_output, mut raw_exit) = (Vec::new(), Vec::new());
    for i in 0..RUNS {
        let (output, exit) = raw_run(runtime, &rootfs.path, &dir.path().join("raw"), i).await?;
        raw_output.push(output);
        raw_exit.push(exit);
    }
    report(name, "raw run: spawn → first output", &mut raw_output);
    report(name, "raw run: spawn → exit", &mut raw_exit);
    images.release(&raw_id).await?;

    let _ = stop.send(true);
    let _ = worker.await;
    cp.stop().await;
    Ok(())
}

/// One `echo` container through the controlplane: times to its first
/// output chunk and to its exit.
async fn run_once(channel: &Channel, token: &str, image: &str) -> Result<(Duration, Duration)> {
    let started = Instant::now();
    let container = ContainerServiceClient::new(channel.clone())
        .run_container(authed(
            RunContainerRequest {
                image: image.to_owned(),
                args: vec!["echo".into(), "ready".into()],
                cpu_millicores: 500,
                memory_mib: 64,
                ..Default::default()
            },
            token,
        )?)
        .await?
        .into_inner()
        .container
        .context("no container")?;
    let mut stream = ContainerServiceClient::new(channel.clone())
        .stream_container_logs(authed(
            StreamContainerLogsRequest {
                container_id: container.container_id,
                follow: true,
            },
            token,
        )?)
        .await?
        .into_inner();
    let mut first_output = None;
    while let Some(event) = stream.next().await {
        match event?.kind {
            Some(container_log_event::Kind::Log(_)) => {
                first_output.get_or_insert_with(|| started.elapsed());
            }
            Some(container_log_event::Kind::Exited(c)) => {
                if c.state() != ContainerState::Exited || c.exit_code != 0 {
                    let state = ContainerState::word_of(c.state);
                    bail!("bench container ended {state} ({})", c.message);
                }
                let exit = started.elapsed();
                return Ok((first_output.unwrap_or(exit), exit));
            }
            None => {}
        }
    }
    bail!("the log stream ended before the container")
}

/// The same `echo` run by hand: a bundle from `runc spec` on the same root
/// filesystem, `run` in the foreground.
async fn raw_run(
    runtime: RuntimeKind,
    rootfs: &Path,
    base: &Path,
    i: usize,
) -> Result<(Duration, Duration)> {
    let bundle = base.join(format!("b{i}"));
    std::fs::create_dir_all(&bundle)?;
    let status = std::process::Command::new("runc")
        .arg("spec")
        .current_dir(&bundle)
        .status()?;
    anyhow::ensure!(status.success(), "runc spec failed");
    let path = bundle.join("config.json");
    let mut spec: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    spec["process"]["terminal"] = false.into();
    spec["process"]["args"] = serde_json::json!(["echo", "ready"]);
    spec["root"]["path"] = rootfs.display().to_string().into();
    spec["root"]["readonly"] = false.into();
    std::fs::write(&path, serde_json::to_vec(&spec)?)?;
    let state = base.join("state");
    let id = format!("l9bench-raw-{i}");
    let mut command = match runtime {
        RuntimeKind::Runc => {
            let mut c = tokio::process::Command::new("runc");
            c.arg("--root").arg(&state);
            c
        }
        RuntimeKind::Gvisor => {
            let mut c = tokio::process::Command::new("runsc");
            c.arg("--root")
                .arg(&state)
                .args(["--rootless=false", "--network=none"]);
            c
        }
    };
    command
        .args(["run", "--bundle"])
        .arg(&bundle)
        .arg(&id)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .stdin(Stdio::null());
    let started = Instant::now();
    let mut child = command.spawn()?;
    let mut stdout = child.stdout.take().context("stdout")?;
    let mut byte = [0u8; 1];
    stdout.read_exact(&mut byte).await?;
    let first_output = started.elapsed();
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).await?;
    let status = child.wait().await?;
    let exit = started.elapsed();
    anyhow::ensure!(status.success(), "raw run failed: {status}");
    Ok((first_output, exit))
}

fn report(runtime: &str, measure: &str, samples: &mut [Duration]) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    println!(
        "| {runtime} | {measure} | {} | {:.1} ms | {:.1} ms |",
        samples.len(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3
    );
}
