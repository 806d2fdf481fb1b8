//! Workers and test images for end-to-end container tests.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use levers9_api::v1::cluster_service_client::ClusterServiceClient;
use levers9_api::v1::{
    ContainerState, CreateTokenRequest, GetContainerRequest, GetWorkersWantedRequest,
    GetWorkersWantedResponse, ListWorkersRequest, PoolScaling, WorkerStatus,
};
use levers9_api::Words;

use super::{text, with_token, Controlplane, WORKER_BIN};

/// The busybox test image, built and pushed once per test binary; its
/// reference by digest.
pub fn busybox_image() -> String {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE
        .get_or_init(|| push("push-busybox-image.sh", "busybox"))
        .clone()
}

/// The Python base image (Debian's Python 3.11), pushed once per test binary.
pub fn python_image() -> String {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE
        .get_or_init(|| push("push-python-image.sh", "python"))
        .clone()
}

/// The Python base image with Debian's FastAPI (Starlette, pydantic 1),
/// pushed once per test binary.
pub fn fastapi_image() -> String {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE
        .get_or_init(|| push("push-fastapi-image.sh", "fastapi"))
        .clone()
}

fn push(script: &str, name: &str) -> String {
    let registry = std::env::var("LEVERS9_TEST_REGISTRY").unwrap_or_else(|_| {
        panic!("LEVERS9_TEST_REGISTRY is not set: run the tests with scripts/test-servers.sh (make test)")
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts")
        .join(script);
    let tag = format!("{registry}/levers9-e2e/{name}:{}", std::process::id());
    let out = Command::new(script)
        .arg(&tag)
        .output()
        .expect("push the test image");
    assert!(out.status.success(), "push failed: {}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

/// A controlplane on `backend`, its admin token, and one runc worker of
/// the pool `default`.
pub async fn stack(backend: super::Backend) -> (Controlplane, String, Worker) {
    let cp = Controlplane::start(backend);
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "runc").await;
    (cp, admin, worker)
}

/// A worker process; stopped with SIGTERM (containers stopped too) on drop.
pub struct Worker {
    child: Option<Child>,
    pub state_dir: tempfile::TempDir,
    log: std::path::PathBuf,
}

impl Worker {
    /// Starts a worker of `pool` on `runtime` (runc or gvisor) and waits
    /// until the controlplane lists it.
    pub async fn start(cp: &Controlplane, admin: &str, pool: &str, runtime: &str) -> Worker {
        let state_dir = tempfile::Builder::new()
            .prefix("l9w-")
            .tempdir()
            .expect("state dir");
        Self::start_in(cp, admin, pool, runtime, state_dir).await
    }

    /// Like [`Worker::start`], with room for the SDK's whole suite: each of
    /// its functions' warm containers keeps its reservation (125m by
    /// default) until its keep-warm window ends, and together they fill the
    /// usual two cores, so a later test's container would wait a minute for
    /// room. Reservations only: the containers use far less. Sixteen cores:
    /// the 1,000-input map alone scales to 40 containers (5 cores) on a
    /// busy machine, with 20 more of the tests before it still warm.
    pub async fn start_roomy(cp: &Controlplane, admin: &str, pool: &str, runtime: &str) -> Worker {
        let state_dir = tempfile::Builder::new()
            .prefix("l9w-")
            .tempdir()
            .expect("state dir");
        let room = ["--cpu-millicores", "16000", "--memory-mib", "16384"];
        let (worker, worker_id) = Self::spawn_in(cp, admin, pool, runtime, state_dir, &room).await;
        worker.wait_listed(cp, admin, &worker_id).await;
        worker
    }

    /// Like [`Worker::start`], reusing a state dir (a restarted worker).
    pub async fn start_in(
        cp: &Controlplane,
        admin: &str,
        pool: &str,
        runtime: &str,
        state_dir: tempfile::TempDir,
    ) -> Worker {
        let (worker, worker_id) = Self::spawn_in(cp, admin, pool, runtime, state_dir, &[]).await;
        worker.wait_listed(cp, admin, &worker_id).await;
        worker
    }

    /// A runc worker of `pool` offering these GPUs (`TYPE:ID,ID`).
    pub async fn start_with_gpus(
        cp: &Controlplane,
        admin: &str,
        pool: &str,
        gpus: &[&str],
    ) -> Worker {
        Self::start_with_gpus_and_env(cp, admin, pool, gpus, &[]).await
    }

    /// Like [`Worker::start_with_gpus`], with extra environment.
    pub async fn start_with_gpus_and_env(
        cp: &Controlplane,
        admin: &str,
        pool: &str,
        gpus: &[&str],
        env: &[(String, String)],
    ) -> Worker {
        let state_dir = tempfile::Builder::new()
            .prefix("l9w-")
            .tempdir()
            .expect("state dir");
        let extra: Vec<&str> = gpus.iter().flat_map(|g| ["--gpu", g]).collect();
        let (worker, worker_id) =
            Self::spawn_with_env(cp, admin, pool, "runc", state_dir, &extra, env).await;
        worker.wait_listed(cp, admin, &worker_id).await;
        worker
    }

    /// A runc worker of `pool` with this extra environment (e.g. the
    /// `LEVERS9_JUICEFS_*` settings).
    pub async fn start_with_env(
        cp: &Controlplane,
        admin: &str,
        pool: &str,
        env: &[(String, String)],
    ) -> Worker {
        Self::start_on_with_env(cp, admin, pool, "runc", env).await
    }

    /// Like [`Worker::start_with_env`], on `runtime` (runc or gvisor).
    pub async fn start_on_with_env(
        cp: &Controlplane,
        admin: &str,
        pool: &str,
        runtime: &str,
        env: &[(String, String)],
    ) -> Worker {
        let state_dir = tempfile::Builder::new()
            .prefix("l9w-")
            .tempdir()
            .expect("state dir");
        let (worker, worker_id) =
            Self::spawn_with_env(cp, admin, pool, runtime, state_dir, &[], env).await;
        worker.wait_listed(cp, admin, &worker_id).await;
        worker
    }

    /// Starts the process and returns at once, with the worker's id.
    pub async fn spawn_in(
        cp: &Controlplane,
        admin: &str,
        pool: &str,
        runtime: &str,
        state_dir: tempfile::TempDir,
        extra: &[&str],
    ) -> (Worker, String) {
        Self::spawn_with_env(cp, admin, pool, runtime, state_dir, extra, &[]).await
    }

    async fn spawn_with_env(
        cp: &Controlplane,
        admin: &str,
        pool: &str,
        runtime: &str,
        state_dir: tempfile::TempDir,
        extra: &[&str],
        env: &[(String, String)],
    ) -> (Worker, String) {
        let token = cp
            .tokens()
            .await
            .create_token(with_token(
                CreateTokenRequest {
                    token_type: "worker".into(),
                    description: "e2e".into(),
                },
                admin,
            ))
            .await
            .expect("worker token")
            .into_inner()
            .secret;
        let worker_id = format!("w-{}-{}", pool, uuid_suffix());
        let mut args = vec![
            "--pool",
            pool,
            "--runtime",
            runtime,
            "--worker-id",
            &worker_id,
        ];
        args.extend(extra);
        let address = format!("127.0.0.1:{}", cp.grpc_port);
        let worker = Self::launch(&address, &token, &args, env, state_dir);
        (worker, worker_id)
    }

    /// Starts `levers9-worker ARGS` (the worker image's binary) against the
    /// controlplane at `address` with this token and extra environment;
    /// returns at once.
    pub fn launch(
        address: &str,
        token: &str,
        args: &[&str],
        env: &[(String, String)],
        state_dir: tempfile::TempDir,
    ) -> Worker {
        let log = state_dir.path().join("worker.log");
        let log_file = std::fs::File::create(&log).expect("log");
        // Two cores and 2 GiB unless the caller sized it.
        let sized = args.contains(&"--cpu-millicores");
        let capacity = ["--cpu-millicores", "2000", "--memory-mib", "2048"];
        let child = Command::new(WORKER_BIN)
            .args(args)
            .args(capacity.iter().filter(|_| !sized))
            // Tests end with containers running: drain no longer than this.
            .args(["--drain-grace-seconds", "1"])
            .arg("--controlplane")
            .arg(address)
            .arg("--state-dir")
            .arg(state_dir.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("LEVERS9_TOKEN", token)
            .envs(env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log"))
            .stderr(log_file)
            .spawn()
            .expect("spawn levers9-worker");
        Worker {
            child: Some(child),
            state_dir,
            log,
        }
    }

    /// Waits until the controlplane lists `worker_id` as ready.
    pub async fn wait_listed(&self, cp: &Controlplane, admin: &str, worker_id: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let workers = cp
                .workers()
                .await
                .list_workers(with_token(ListWorkersRequest {}, admin))
                .await
                .expect("list workers")
                .into_inner()
                .workers;
            if workers
                .iter()
                .any(|w| w.worker_id == worker_id && w.status() == WorkerStatus::Ready)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "worker never registered:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Where its log is written.
    pub fn log_path(&self) -> &std::path::Path {
        &self.log
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The worker process's id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the process with SIGKILL, leaving its containers behind.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops it with SIGTERM and hands back its state dir.
    pub fn stop(mut self) -> tempfile::TempDir {
        self.terminate();
        let dir = tempfile::Builder::new().tempdir().expect("dir");
        std::mem::replace(&mut self.state_dir, dir)
    }

    /// Stops it with SIGTERM (kill after 20 s), keeping its state dir.
    pub fn terminate(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.terminate();
    }
}

fn uuid_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Waits until the container is in `state` and returns it.
pub async fn wait_for_state(
    cp: &Controlplane,
    admin: &str,
    container_id: &str,
    state: &str,
    within: Duration,
) -> levers9_api::v1::Container {
    let deadline = Instant::now() + within;
    loop {
        let container = cp
            .containers()
            .await
            .get_container(with_token(
                GetContainerRequest {
                    container_id: container_id.into(),
                },
                admin,
            ))
            .await
            .expect("get container")
            .into_inner()
            .container
            .expect("container");
        if ContainerState::word_of(container.state) == state {
            return container;
        }
        assert!(
            Instant::now() < deadline,
            "container {container_id} is {} ({}), not {state}",
            ContainerState::word_of(container.state),
            container.message
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `pool`'s demand as its provider reads it: requests waiting for room
/// (those the scheduler found no room for), workers present and wanted.
pub async fn wanted(
    cp: &Controlplane,
    token: &str,
    pool: &str,
    scaling: Option<PoolScaling>,
) -> Result<GetWorkersWantedResponse, tonic::Status> {
    ClusterServiceClient::new(cp.channel().await)
        .get_workers_wanted(with_token(
            GetWorkersWantedRequest {
                pool: pool.into(),
                scaling,
            },
            token,
        ))
        .await
        .map(tonic::Response::into_inner)
}

/// Asks for `pool`'s demand until `done` holds, for 20 s at most; the
/// last answer.
pub async fn wait_wanted(
    cp: &Controlplane,
    token: &str,
    pool: &str,
    scaling: Option<PoolScaling>,
    done: impl Fn(&GetWorkersWantedResponse) -> bool,
) -> GetWorkersWantedResponse {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = wanted(cp, token, pool, scaling)
            .await
            .expect("workers wanted");
        if done(&answer) || Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
