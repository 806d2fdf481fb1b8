//! The embedded backend: one SQLite file, for a single-machine install.

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use crate::error::{token_insert_error, StoreError};
use crate::model::{NewToken, NewWorkspace, TokenRecord, Workspace};
use crate::{sql, RecordStore};

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

#[async_trait::async_trait]
impl RecordStore for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn ping(&self) -> Result<(), StoreError> {
        sql::ping().execute(&self.reader).await?;
        Ok(())
    }

    async fn bootstrap_first_workspace(
        &self,
        workspace: NewWorkspace,
        token: NewToken,
    ) -> Result<Option<Workspace>, StoreError> {
        sql::bootstrap(&self.writer, &workspace, &token).await
    }

    async fn has_workspace(&self) -> Result<bool, StoreError> {
        Ok(sql::workspace_exists().fetch_one(&self.reader).await?)
    }

    async fn create_workspace(
        &self,
        workspace: NewWorkspace,
        token: NewToken,
    ) -> Result<Workspace, StoreError> {
        sql::create_workspace(&self.writer, &workspace, &token).await
    }

    async fn get_workspace(&self, id: &str) -> Result<Option<Workspace>, StoreError> {
        let row = sql::select_workspace(id)
            .fetch_optional(&self.reader)
            .await?;
        Ok(row.map(sql::WorkspaceRow::into_workspace))
    }

    async fn insert_token(&self, token: NewToken) -> Result<TokenRecord, StoreError> {
        sql::insert_token(&token)
            .execute(&self.writer)
            .await
            .map_err(|e| token_insert_error(e, &token))?;
        Ok(sql::stored_token(&token))
    }

    async fn find_token_by_hash(
        &self,
        hash: &[u8],
    ) -> Result<Option<(TokenRecord, Workspace)>, StoreError> {
        let row = sql::find_token_by_hash(hash)
            .fetch_optional(&self.reader)
            .await?;
        row.map(sql::TokenWithWorkspaceRow::into_pair).transpose()
    }

    async fn list_tokens(&self, workspace_id: &str) -> Result<Vec<TokenRecord>, StoreError> {
        let rows = sql::list_tokens(workspace_id)
            .fetch_all(&self.reader)
            .await?;
        rows.into_iter().map(sql::TokenRow::into_record).collect()
    }

    async fn revoke_token(
        &self,
        workspace_id: &str,
        token_id: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<TokenRecord>, StoreError> {
        let row = sql::revoke_token(workspace_id, token_id, at)
            .fetch_optional(&self.writer)
            .await?;
        row.map(sql::TokenRow::into_record).transpose()
    }

    async fn touch_token(&self, token_id: &str, at: DateTime<Utc>) -> Result<(), StoreError> {
        sql::touch_token(token_id, at).execute(&self.writer).await?;
        Ok(())
    }
}
