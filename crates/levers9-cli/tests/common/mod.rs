//! Starts the real `levers9` binary as a controlplane on loopback, on the
//! embedded backends or on the test Postgres and Redis, and drives it.
#![allow(dead_code)] // each test binary uses a different part of this harness

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub mod fleet;
pub mod juicefs;
pub mod registry;
pub mod sdk;
pub mod stubs;

use levers9_api::v1::auth_service_client::AuthServiceClient;
use levers9_api::v1::container_service_client::ContainerServiceClient;
use levers9_api::v1::function_service_client::FunctionServiceClient;
use levers9_api::v1::secret_service_client::SecretServiceClient;
use levers9_api::v1::token_service_client::TokenServiceClient;
use levers9_api::v1::worker_service_client::WorkerServiceClient;
use levers9_api::v1::workspace_service_client::WorkspaceServiceClient;
use levers9_api::v1::{AuthorizeRequest, AuthorizeResponse};
use tonic::transport::Channel;

pub const BIN: &str = env!("CARGO_BIN_EXE_levers9");
/// The worker-only binary the worker image ships; the tests' workers run it.
pub const WORKER_BIN: &str = env!("CARGO_BIN_EXE_levers9-worker");
pub const SECRET: &str = "e2e-bootstrap-secret";

/// Which record store and hot state a controlplane runs on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Backend {
    /// SQLite file + in-process hot state.
    Embedded,
    /// The test Postgres and Redis.
    Servers,
}

/// Environment that points a controlplane at a backend. For `Servers`, a
/// fresh database and Redis key prefix, so tests run in parallel.
pub fn backend_env(backend: Backend) -> Vec<(String, String)> {
    match backend {
        Backend::Embedded => Vec::new(),
        Backend::Servers => {
            let pg = required("LEVERS9_TEST_DATABASE_URL");
            let redis = required("LEVERS9_TEST_REDIS_URL");
            let name = format!("l9e2e_{}", uuid_like());
            let created = Command::new("psql")
                .args([pg.as_str(), "-q", "-c", &format!("CREATE DATABASE {name}")])
                .output()
                .expect("psql runs");
            assert!(created.status.success(), "create database: {created:?}");
            // postgres://user@host:port/db
            let rest = pg.split("://").nth(1).expect("url has a scheme");
            let (user, rest) = rest.split_once('@').expect("url has a user");
            let host_port = rest.split('/').next().expect("url has a host");
            let (host, port) = host_port.rsplit_once(':').expect("url has a port");
            let redis_addr = redis.trim_start_matches("redis://").trim_end_matches('/');
            vec![
                ("LEVERS9_POSTGRES_HOST".into(), host.into()),
                ("LEVERS9_POSTGRES_PORT".into(), port.into()),
                ("LEVERS9_POSTGRES_USER".into(), user.into()),
                ("LEVERS9_POSTGRES_NAME".into(), name.clone()),
                ("LEVERS9_REDIS_ADDRS".into(), redis_addr.into()),
                ("LEVERS9_REDIS_KEY_PREFIX".into(), format!("{name}:")),
            ]
        }
    }
}

/// The Postgres URL of a `Servers` environment from [`backend_env`].
pub fn database_url(env: &[(String, String)]) -> String {
    let get = |name: &str| {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{name} is not in the environment"))
    };
    format!(
        "postgres://{}@{}:{}/{}",
        get("LEVERS9_POSTGRES_USER"),
        get("LEVERS9_POSTGRES_HOST"),
        get("LEVERS9_POSTGRES_PORT"),
        get("LEVERS9_POSTGRES_NAME")
    )
}

/// Environment that puts a controlplane's workspace objects (code and SDK
/// zips) in the test bucket under a fresh prefix. Replicas given the same
/// environment share their objects, as the local directory cannot.
pub fn objects_bucket_env(label: &str) -> Vec<(String, String)> {
    let prefix = format!("e2e/{label}-{}/", uuid_like());
    [
        (
            "LEVERS9_WORKSPACE_S3_ENDPOINT",
            required("LEVERS9_TEST_S3_ENDPOINT"),
        ),
        (
            "LEVERS9_WORKSPACE_BUCKET",
            required("LEVERS9_TEST_S3_BUCKET"),
        ),
        ("LEVERS9_WORKSPACE_PREFIX", prefix),
        (
            "LEVERS9_WORKSPACE_ACCESS_KEY_ID",
            required("LEVERS9_TEST_S3_ACCESS_KEY_ID"),
        ),
        (
            "LEVERS9_WORKSPACE_SECRET_ACCESS_KEY",
            required("LEVERS9_TEST_S3_SECRET_ACCESS_KEY"),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

fn required(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run the tests with scripts/test-servers.sh cargo test (make test)"
        )
    })
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .subsec_nanos();
    format!(
        "{}_{}_{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// `config` written to a YAML file that outlives the test (a controlplane
/// reads it at start); its path, for `LEVERS9_CONFIG`.
pub fn config_file(config: &str) -> PathBuf {
    let file = tempfile::Builder::new()
        .suffix(".yaml")
        .tempfile()
        .expect("config file");
    std::fs::write(file.path(), config).expect("write config");
    let (_, path) = file.keep().expect("keep config");
    path
}

/// A port free now and never handed out before by this test binary: the
/// kernel may give the same ephemeral port to two binds in a row once the
/// first is closed, and a controlplane given one port twice refuses to start.
pub fn free_port() -> u16 {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static GIVEN: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .expect("bind a free port")
            .local_addr()
            .expect("local addr")
            .port();
        let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
        if given.get_or_insert_with(HashSet::new).insert(port) {
            return port;
        }
    }
}

/// A controlplane process; killed when dropped.
pub struct Controlplane {
    child: Child,
    pub grpc_port: u16,
    pub http_port: u16,
    pub dir: tempfile::TempDir,
    log: PathBuf,
}

impl Controlplane {
    /// Starts one with the bootstrap secret [`SECRET`].
    pub fn start(backend: Backend) -> Controlplane {
        let mut env = backend_env(backend);
        env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
        Self::start_with(env)
    }

    /// Starts one with exactly this extra environment.
    pub fn start_with(env: Vec<(String, String)>) -> Controlplane {
        let mut cp = Self::spawn_with(env);
        cp.wait_healthy();
        cp
    }

    /// Starts the process and returns at once, before it listens.
    pub fn spawn_with(env: Vec<(String, String)>) -> Controlplane {
        Self::spawn_as(false, env)
    }

    /// Starts `levers9 up` (a controlplane on the embedded state with its
    /// own worker, writing the CLI context "local" under this HOME) rather
    /// than `levers9 controlplane`; returns at once.
    pub fn up(env: Vec<(String, String)>) -> Controlplane {
        Self::spawn_as(true, env)
    }

    /// The admin token `levers9 up` saved in its CLI context.
    pub fn up_admin_token(&self) -> String {
        let path = self.dir.path().join(".levers9").join("config.toml");
        let text = std::fs::read_to_string(&path).expect("levers9 up wrote its CLI config");
        let config: toml::Value = text.parse().expect("toml");
        config["contexts"]["local"]["token"]
            .as_str()
            .expect("a token in the local context")
            .to_owned()
    }

    fn spawn_as(up: bool, env: Vec<(String, String)>) -> Controlplane {
        let dir = tempfile::tempdir().expect("temp dir");
        let port_from_env = |name: &str| {
            env.iter()
                .find(|(k, _)| k == name)
                .and_then(|(_, v)| v.parse().ok())
        };
        let grpc_port = port_from_env("LEVERS9_GRPC_PORT").unwrap_or_else(free_port);
        let http_port = port_from_env("LEVERS9_HTTP_PORT").unwrap_or_else(free_port);
        let log = dir.path().join("controlplane.log");
        let log_file = std::fs::File::create(&log).expect("log file");
        let mut command = Command::new(BIN);
        if up {
            command
                .arg("up")
                .arg("--data-dir")
                .arg(dir.path().join("data"))
                .args(["--grpc-port", &grpc_port.to_string()])
                .args(["--http-port", &http_port.to_string()]);
        } else {
            command.arg("controlplane");
        }
        let child = command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("LEVERS9_BIND_ADDRESS", "127.0.0.1")
            .env("LEVERS9_GRPC_PORT", grpc_port.to_string())
            .env("LEVERS9_HTTP_PORT", http_port.to_string())
            .env("LEVERS9_DATA_DIR", dir.path().join("data"))
            .envs(env)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log file"))
            .stderr(log_file)
            .spawn()
            .expect("spawn levers9 controlplane");
        Controlplane {
            child,
            grpc_port,
            http_port,
            dir,
            log,
        }
    }

    /// Waits until both listeners accept connections.
    pub fn wait_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("controlplane exited with {status}:\n{}", self.log());
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.http_port)).is_ok()
                && std::net::TcpStream::connect(("127.0.0.1", self.grpc_port)).is_ok()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("controlplane did not listen within 30 s:\n{}", self.log());
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The process id, to look at its /proc entries.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops it with SIGTERM, as an operator would, so it cleans up (its
    /// volume mount included); killed after 20 s.
    pub fn terminate(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the process to exit on its own and returns its log.
    pub fn wait_exit(&mut self, within: Duration) -> String {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return self.log();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "the controlplane is still running after {within:?}:\n{}",
            self.log()
        );
    }

    /// Waits for a log line containing `needle` and returns it.
    pub async fn wait_for_log(&self, needle: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(line) = self.log().lines().find(|l| l.contains(needle)) {
                return line.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "no log line with {needle:?} within {within:?}:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn http(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.http_port)
    }

    pub async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://127.0.0.1:{}", self.grpc_port))
            .expect("uri")
            .timeout(Duration::from_secs(10))
            .connect()
            .await
            .expect("connect to the controlplane")
    }

    pub async fn auth(&self) -> AuthServiceClient<Channel> {
        AuthServiceClient::new(self.channel().await)
    }

    pub async fn tokens(&self) -> TokenServiceClient<Channel> {
        TokenServiceClient::new(self.channel().await)
    }

    pub async fn workers(&self) -> WorkerServiceClient<Channel> {
        WorkerServiceClient::new(self.channel().await)
    }

    pub async fn containers(&self) -> ContainerServiceClient<Channel> {
        ContainerServiceClient::new(self.channel().await)
    }

    pub async fn functions(&self) -> FunctionServiceClient<Channel> {
        FunctionServiceClient::new(self.channel().await)
    }

    pub async fn secrets(&self) -> SecretServiceClient<Channel> {
        SecretServiceClient::new(self.channel().await)
    }

    pub async fn workspaces(&self) -> WorkspaceServiceClient<Channel> {
        WorkspaceServiceClient::new(self.channel().await)
    }

    /// Authorize with the bootstrap secret metadata.
    pub async fn bootstrap(&self, secret: &str) -> Result<AuthorizeResponse, tonic::Status> {
        let mut request = tonic::Request::new(AuthorizeRequest {});
        request
            .metadata_mut()
            .insert("x-levers9-bootstrap-secret", secret.parse().expect("ascii"));
        self.auth()
            .await
            .authorize(request)
            .await
            .map(|r| r.into_inner())
    }

    /// Bootstraps and returns the admin token.
    pub async fn admin_token(&self) -> String {
        let answer = self.bootstrap(SECRET).await.expect("bootstrap");
        assert!(!answer.new_token.is_empty());
        answer.new_token
    }

    /// Runs the CLI against this controlplane with `token`, as a user with
    /// no CLI config would (a fresh HOME, the LEVERS9_* variables).
    pub fn cli_as(&self, token: &str, args: &[&str], stdin: Option<&str>) -> Output {
        let home = tempfile::tempdir().expect("home");
        let port = self.grpc_port.to_string();
        let env = [
            ("LEVERS9_TOKEN", token),
            ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
            ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
        ];
        run_cli(home.path(), args, &env, stdin)
    }

    /// Runs the CLI against this controlplane with a HOME of its own.
    pub fn cli(
        &self,
        home: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        stdin: Option<&str>,
    ) -> Output {
        run_cli(home, args, env, stdin)
    }
}

impl Drop for Controlplane {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A request with `authorization: Bearer <token>`.
pub fn with_token<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("ascii"),
    );
    request
}

/// Runs `levers9 ARGS` with only PATH, HOME and `env`, feeding `stdin` (or
/// none at all).
pub fn run_cli(home: &Path, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .envs(env.iter().copied())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn levers9");
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(text.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("levers9 finishes")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One `#[tokio::test]` per backend for an async check taking a [`Backend`].
#[macro_export]
macro_rules! on_both_backends {
    ($($check:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test]
                async fn $check() {
                    super::$check($crate::common::Backend::Embedded).await;
                }
            )*
        }
        mod servers {
            $(
                #[tokio::test]
                async fn $check() {
                    super::$check($crate::common::Backend::Servers).await;
                }
            )*
        }
    };
}
