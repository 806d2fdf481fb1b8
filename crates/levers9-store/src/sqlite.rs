//! The embedded backend: one SQLite file, for a single-machine install.

use std::path::Path;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use crate::error::StoreError;

/// The SQLite schema, embedded at build time.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// How long a call waits for a pooled connection, and SQLite for a lock, before failing.
const WAIT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections serving reads; WAL lets them run alongside the writer.
const READERS: u32 = 4;

/// Records kept in one SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// Every write goes through this single connection, so writes queue inside the
    /// process and a deferred transaction can never deadlock upgrading its lock.
    pub(crate) writer: SqlitePool,
    /// Read-only connections for everything that does not write.
    pub(crate) reader: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating it and its directories if missing) the file at `path` and brings the schema up to date.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .busy_timeout(WAIT_TIMEOUT)
            .foreign_keys(true);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(WAIT_TIMEOUT)
            .connect_with(
                options
                    .clone()
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal),
            )
            .await?;
        MIGRATOR.run(&writer).await?;
        // No journal_mode here: WAL is recorded in the file, and setting it needs a write.
        let reader = SqlitePoolOptions::new()
            .max_connections(READERS)
            .acquire_timeout(WAIT_TIMEOUT)
            .connect_with(options.read_only(true))
            .await?;
        Ok(SqliteStore { writer, reader })
    }
}
