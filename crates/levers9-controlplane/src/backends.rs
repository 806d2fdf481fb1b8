//! Picks the record store and the hot state from the configuration:
//! Postgres and Redis when configured, the embedded pair otherwise.

use std::path::PathBuf;
use std::sync::Arc;

use levers9_config::Config;
use levers9_state::{HotState, MemoryState, RedisState, StateError};
use levers9_store::{
    FunctionStore, LogStore, MachineStore, PostgresSettings, PostgresStore, RecordStore,
    SealedStore, SqliteStore, StoreError,
};

/// Why a backend could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// Postgres or SQLite.
    #[error("cannot open the record store ({backend}): {source}")]
    Store {
        /// Which one.
        backend: &'static str,
        /// Why.
        source: StoreError,
    },
    /// Redis.
    #[error("cannot connect to Redis at {addr}: {source}")]
    State {
        /// host:port (never the password).
        addr: String,
        /// Why.
        source: StateError,
    },
}

/// One database seen through its traits.
#[derive(Clone)]
pub struct Stores {
    /// Workspaces and tokens.
    pub records: Arc<dyn RecordStore>,
    /// Sealed values.
    pub sealed: Arc<dyn SealedStore>,
    /// Stubs, tasks and objects.
    pub functions: Arc<dyn FunctionStore>,
    /// Pools made at run time and machines.
    pub machines: Arc<dyn MachineStore>,
    /// What tasks printed.
    pub logs: Arc<dyn LogStore>,
}

impl Stores {
    fn of<S: RecordStore + SealedStore + FunctionStore + MachineStore + LogStore>(
        store: S,
    ) -> Stores {
        let store = Arc::new(store);
        Stores {
            records: store.clone(),
            sealed: store.clone(),
            functions: store.clone(),
            machines: store.clone(),
            logs: store,
        }
    }
}

/// Opens the record store the configuration asks for.
pub async fn open_store(config: &Config) -> Result<Stores, BackendError> {
    let pg = &config.database.postgres;
    if pg.is_configured() {
        let settings = PostgresSettings {
            host: &pg.host,
            port: pg.port,
            database: &pg.name,
            user: &pg.user,
            password: pg.password.expose(),
            ssl_mode: &pg.ssl_mode,
        };
        let store = PostgresStore::connect_with(&settings, pg.max_connections)
            .await
            .map_err(|source| BackendError::Store {
                backend: "postgres",
                source,
            })?;
        return Ok(Stores::of(store));
    }
    let path = sqlite_path(config);
    let store = SqliteStore::open(&path)
        .await
        .map_err(|source| BackendError::Store {
            backend: "sqlite",
            source,
        })?;
    Ok(Stores::of(store))
}

/// The embedded database file.
pub fn sqlite_path(config: &Config) -> PathBuf {
    let configured = &config.database.sqlite.path;
    if configured.is_empty() {
        config.controlplane.data_dir().join("levers9.db")
    } else {
        PathBuf::from(configured)
    }
}

/// Opens the hot state the configuration asks for.
pub async fn open_state(config: &Config) -> Result<Arc<dyn HotState>, BackendError> {
    let redis = &config.database.redis;
    if !redis.is_configured() {
        return Ok(Arc::new(MemoryState::new()));
    }
    let password = (!redis.password.is_empty()).then(|| redis.password.expose());
    let state = RedisState::connect_with(&redis.addrs, password, redis.db, &redis.key_prefix)
        .await
        .map_err(|source| BackendError::State {
            addr: redis.addrs.join(","),
            source,
        })?;
    Ok(Arc::new(state))
}
