//! The provider of `provider: process` pools: each worker is a
//! `levers9 worker` child process of the controlplane, on its machine.
//!
//! # Guarantees
//! - Each worker gets a worker token of its own, minted here in the oldest
//!   workspace and revoked once the process is gone. The token reaches the
//!   process in its environment (`LEVERS9_TOKEN`), never in its arguments,
//!   and the environment holds nothing else of the controlplane's.
//! - Each worker has a state directory of its own, a numbered slot under
//!   the pool's directory, reused by a later worker once its process is
//!   gone (so the image cache survives a scale to zero).
//! - The worker reads a config file (mode 0600, in its state directory)
//!   with the keys a worker uses: `worker.*`, the volumes' `storage.*`
//!   keys and `controlplane.dataDir`; never the database's.
//! - A removed worker gets SIGTERM, by PID, and drains; an exited one is
//!   reaped at the next listing. When the controlplane stops, or another
//!   replica holds the pool's lease, every worker it started is stopped the
//!   same way; when it dies, the kernel sends
//!   them SIGTERM (`LEVERS9_WORKER_PARENT_PID`, see `levers9 worker`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use levers9_config::{Config, PoolConfig};
use levers9_provider::{Phase, ProvidedWorker, WorkerProvider};
use levers9_store::{RecordStore, StoreError};
use tokio::sync::Mutex;

use super::worker_token::{self, MintedWorker, WorkerCredential};
use crate::fleet::Fleet;

/// How much longer than its drain grace a stopping worker gets before
/// SIGKILL, when the controlplane stops.
const STOP_MARGIN: Duration = Duration::from_secs(10);

/// What every `provider: process` pool starts its workers with.
pub struct Launch {
    /// Where the tokens of the workers go.
    pub store: Arc<dyn RecordStore>,
    /// The controlplane's own gRPC address as seen from this machine.
    pub controlplane_address: String,
    /// `controlplane.dataDir`, the default home of the workers' state.
    pub data_dir: PathBuf,
    /// The worker config file's text (JSON, which YAML reads).
    pub worker_config: String,
}

impl Launch {
    /// From the controlplane's config and its gRPC listener.
    pub fn new(config: &Config, store: Arc<dyn RecordStore>, grpc: std::net::SocketAddr) -> Self {
        let mut address = grpc;
        // A listener on every address is reached on loopback.
        if address.ip().is_unspecified() {
            address.set_ip(match address.ip() {
                std::net::IpAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                std::net::IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let data_dir = config.controlplane.data_dir();
        let worker_config = serde_json::json!({
            "controlplane": {"dataDir": data_dir},
            "worker": config.worker,
            "storage": {
                "juicefs": config.storage.juicefs,
                "volumes": config.storage.volumes,
            },
        })
        .to_string();
        Self {
            store,
            controlplane_address: address.to_string(),
            data_dir,
            worker_config,
        }
    }
}

/// What starting or stopping a worker process can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// No workspace to mint the worker's token in.
    #[error(
        "cannot start a worker of pool {pool}: the install has no workspace yet to hold its \
         token; bootstrap it first (levers9 controlplane bootstrap, or levers9 up)"
    )]
    NoWorkspace {
        /// The pool's name (a key of `worker.pools`).
        pool: String,
    },
    /// The record store refused the token.
    #[error("cannot keep the token of a worker of pool {pool}: {source}")]
    Token {
        /// The pool's name (a key of `worker.pools`).
        pool: String,
        /// The store's answer.
        #[source]
        source: StoreError,
    },
    /// The worker's state directory, config or log could not be written.
    #[error("cannot prepare {path} for a worker of pool {pool}: {source}")]
    Prepare {
        /// The pool's name (a key of `worker.pools`).
        pool: String,
        /// What was being written.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The process did not start.
    #[error(
        "cannot start {binary} for a worker of pool {pool}: {source} (set \
         worker.pools.{pool}.process.binary to the levers9 executable)"
    )]
    Spawn {
        /// The pool's name (a key of `worker.pools`).
        pool: String,
        /// `worker.pools.<pool>.process.binary`, or this controlplane's own
        /// executable when that is empty.
        binary: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// One worker process.
struct Child {
    /// Its worker id, what the provider lists it as.
    id: String,
    /// Its state directory's number.
    slot: usize,
    process: tokio::process::Child,
    /// Its token, revoked once it is gone.
    credential: WorkerCredential,
    started: SystemTime,
    terminating: bool,
    exited: bool,
}

/// The worker processes of one pool.
#[derive(Clone)]
pub struct ProcessProvider {
    inner: Arc<Inner>,
}

struct Inner {
    pool: String,
    config: PoolConfig,
    launch: Arc<Launch>,
    fleet: Fleet,
    children: Mutex<Vec<Child>>,
}

impl ProcessProvider {
    /// The provider of pool `pool`.
    pub fn new(pool: &str, config: PoolConfig, launch: Arc<Launch>, fleet: Fleet) -> Self {
        Self {
            inner: Arc::new(Inner {
                pool: pool.to_owned(),
                config,
                launch,
                fleet,
                children: Mutex::new(Vec::new()),
            }),
        }
    }

    fn binary(&self) -> Result<PathBuf, ProcessError> {
        let configured = &self.inner.config.process.binary;
        if !configured.is_empty() {
            return Ok(PathBuf::from(configured));
        }
        std::env::current_exe().map_err(|source| ProcessError::Spawn {
            pool: self.inner.pool.clone(),
            binary: "the controlplane's own executable".into(),
            source,
        })
    }

    /// The directory of the pool's state slots.
    fn state_root(&self) -> PathBuf {
        let configured = &self.inner.config.process.state_dir;
        if configured.is_empty() {
            self.inner
                .launch
                .data_dir
                .join("workers")
                .join(&self.inner.pool)
        } else {
            PathBuf::from(configured)
        }
    }

    fn prepare_error(&self, path: &Path) -> impl FnOnce(std::io::Error) -> ProcessError + '_ {
        let path = path.to_owned();
        move |source| ProcessError::Prepare {
            pool: self.inner.pool.clone(),
            path,
            source,
        }
    }

    fn store(&self) -> &dyn RecordStore {
        self.inner.launch.store.as_ref()
    }

    /// A worker token for worker `worker_id`.
    async fn mint_token(&self, worker_id: &str) -> Result<MintedWorker, ProcessError> {
        let pool = &self.inner.pool;
        let description = format!("worker process {worker_id} of pool {pool}");
        worker_token::mint(self.store(), description)
            .await
            .map_err(|source| ProcessError::Token {
                pool: pool.clone(),
                source,
            })?
            .ok_or_else(|| ProcessError::NoWorkspace { pool: pool.clone() })
    }

    /// Writes the worker's state directory and config file; the log file.
    fn prepare(&self, state_dir: &Path) -> Result<std::fs::File, ProcessError> {
        use std::io::Write as _;
        use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(state_dir)
            .map_err(self.prepare_error(state_dir))?;
        let config = state_dir.join("worker-config.yaml");
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&config)
            .and_then(|mut file| file.write_all(self.inner.launch.worker_config.as_bytes()))
            .map_err(self.prepare_error(&config))?;
        let log = state_dir.join("worker.log");
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&log)
            .map_err(self.prepare_error(&log))
    }

    fn command(
        &self,
        binary: &Path,
        worker_id: &str,
        state_dir: &Path,
        token: &str,
    ) -> tokio::process::Command {
        let pool = &self.inner.config;
        let mut command = tokio::process::Command::new(binary);
        command
            .arg("worker")
            .args(["--pool", &self.inner.pool])
            .args(["--runtime", pool.runtime.as_str()])
            .args(["--controlplane", &self.inner.launch.controlplane_address])
            .args(["--worker-id", worker_id])
            .arg("--state-dir")
            .arg(state_dir)
            .arg("--config")
            .arg(state_dir.join("worker-config.yaml"))
            .args([
                "--drain-grace-seconds",
                &pool.process.drain_grace_seconds.to_string(),
            ]);
        if pool.resources.cpu_millicores > 0 {
            command.args([
                "--cpu-millicores",
                &pool.resources.cpu_millicores.to_string(),
            ]);
        }
        if pool.resources.memory_mib > 0 {
            command.args(["--memory-mib", &pool.resources.memory_mib.to_string()]);
        }
        // Nothing of the controlplane's environment (database passwords,
        // keys) reaches the worker: only what it needs.
        command.env_clear();
        for kept in ["PATH", "HOME", "LEVERS9_LOG"] {
            if let Some(value) = std::env::var_os(kept) {
                command.env(kept, value);
            }
        }
        command
            .env("LEVERS9_TOKEN", token)
            // The worker stops with this process, however it dies.
            .env("LEVERS9_WORKER_PARENT_PID", std::process::id().to_string())
            .stdin(Stdio::null());
        command
    }
}

#[async_trait::async_trait]
impl WorkerProvider for ProcessProvider {
    type Error = ProcessError;

    fn pool(&self) -> &str {
        &self.inner.pool
    }

    async fn list(&self) -> Result<Vec<ProvidedWorker>, ProcessError> {
        let mut children = self.inner.children.lock().await;
        let mut listed = Vec::with_capacity(children.len());
        for child in children.iter_mut() {
            if !child.exited {
                if let Ok(Some(status)) = child.process.try_wait() {
                    child.exited = true;
                    if !child.terminating {
                        tracing::warn!(pool = %self.inner.pool, worker_id = %child.id, %status, "a worker process exited on its own");
                    }
                }
            }
            let phase = if child.exited {
                Phase::Finished
            } else if child.terminating {
                Phase::Terminating
            } else if self.inner.fleet.is_alive(&child.id).await.unwrap_or(false) {
                Phase::Running
            } else {
                Phase::Pending
            };
            listed.push(ProvidedWorker {
                name: child.id.clone(),
                phase,
                started: Some(child.started),
            });
        }
        Ok(listed)
    }

    async fn add_worker(&self) -> Result<(), ProcessError> {
        let mut children = self.inner.children.lock().await;
        let slot = (0..)
            .find(|n| children.iter().all(|c| c.slot != *n))
            .unwrap_or_default();
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let worker_id = format!("{}-{slot}-{}", self.inner.pool, &suffix[..8]);
        let state_dir = self.state_root().join(slot.to_string());
        let log = self.prepare(&state_dir)?;
        let binary = self.binary()?;
        let minted = self.mint_token(&worker_id).await?;
        let mut command = self.command(&binary, &worker_id, &state_dir, &minted.secret);
        let stderr = log.try_clone().map_err(self.prepare_error(&state_dir))?;
        command.stdout(log).stderr(stderr);
        let process = match command.spawn() {
            Ok(process) => process,
            Err(source) => {
                minted.credential.revoke(self.store()).await;
                return Err(ProcessError::Spawn {
                    pool: self.inner.pool.clone(),
                    binary,
                    source,
                });
            }
        };
        tracing::info!(pool = %self.inner.pool, %worker_id, pid = process.id(), state_dir = %state_dir.display(), "worker process started");
        children.push(Child {
            id: worker_id,
            slot,
            process,
            credential: minted.credential,
            started: SystemTime::now(),
            terminating: false,
            exited: false,
        });
        Ok(())
    }

    async fn remove_worker(&self, name: &str) -> Result<(), ProcessError> {
        let mut children = self.inner.children.lock().await;
        let Some(index) = children.iter().position(|c| c.id == name) else {
            return Ok(());
        };
        if children[index].exited {
            let child = children.remove(index);
            drop(children);
            child.credential.revoke(self.store()).await;
            tracing::info!(pool = %self.inner.pool, worker_id = %child.id, "worker process gone");
            return Ok(());
        }
        let child = &mut children[index];
        terminate(&child.process);
        child.terminating = true;
        tracing::info!(pool = %self.inner.pool, worker_id = %child.id, "worker process asked to drain and stop");
        Ok(())
    }

    async fn stop(&self) {
        let mut children = self.inner.children.lock().await;
        for child in children.iter() {
            terminate(&child.process);
        }
        let grace =
            Duration::from_secs(self.inner.config.process.drain_grace_seconds) + STOP_MARGIN;
        for mut child in children.drain(..) {
            if tokio::time::timeout(grace, child.process.wait())
                .await
                .is_err()
            {
                tracing::warn!(pool = %self.inner.pool, worker_id = %child.id, "a worker process did not stop in time: killing it");
                let _ = child.process.kill().await;
            }
            child.credential.revoke(self.store()).await;
        }
    }
}

/// SIGTERM, so the worker drains; by PID, which is still the child's:
/// the child is not reaped before [`ProcessProvider::list`] sees it exit.
fn terminate(process: &tokio::process::Child) {
    let Some(pid) = process.id().and_then(|p| i32::try_from(p).ok()) else {
        return;
    };
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn workers_get_the_worker_keys_and_never_the_databases() {
        let dir = tempfile::tempdir().expect("dir");
        let store = levers9_store::SqliteStore::open(&dir.path().join("records.db"))
            .await
            .expect("store");
        let mut config = Config::default();
        config.controlplane.data_dir = "/srv/levers9".into();
        config.database.postgres.password = levers9_config::Secret::new("pg-password-of-cp");
        config.worker.heartbeat_ttl_seconds = 7;
        let launch = Launch::new(&config, Arc::new(store), "0.0.0.0:1993".parse().unwrap());
        assert_eq!(launch.controlplane_address, "127.0.0.1:1993");
        assert_eq!(launch.data_dir, PathBuf::from("/srv/levers9"));
        let text = &launch.worker_config;
        assert!(!text.contains("pg-password-of-cp"), "{text}");
        assert!(!text.contains("database"), "{text}");
        // What a worker loads with `--config`: YAML reads the JSON.
        let file = dir.path().join("worker-config.yaml");
        std::fs::write(&file, text).expect("write");
        let (read, _) = levers9_config::load(Some(&file), &|_| None).expect("loads");
        assert_eq!(read.worker.heartbeat_ttl_seconds, 7);
        assert_eq!(read.controlplane.data_dir, "/srv/levers9");
    }
}
