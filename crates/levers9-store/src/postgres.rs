//! The production backend: PostgreSQL, shared by every controlplane replica.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgSslMode};

use crate::error::{token_insert_error, StoreError};
use crate::model::{NewToken, NewWorkspace, TokenRecord, Workspace};
use crate::{sql, RecordStore};

/// The Postgres schema, embedded at build time.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// How long a call waits for a pooled connection before failing, so an exhausted
/// pool or an unreachable server surfaces as an error instead of a hang.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// Records kept in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pub(crate) pool: PgPool,
}

/// Where and how to reach Postgres, given field by field so the password is
/// never formatted into a URL that could end up in a log line.
#[derive(Clone)]
pub struct PostgresSettings<'a> {
    /// Host name or address.
    pub host: &'a str,
    /// Port.
    pub port: u16,
    /// Database name.
    pub database: &'a str,
    /// User.
    pub user: &'a str,
    /// Password; empty for none.
    pub password: &'a str,
    /// libpq `sslmode`: disable, allow, prefer, require, verify-ca or verify-full.
    pub ssl_mode: &'a str,
}

impl PostgresStore {
    /// Connects with at most `max_connections` pooled connections and brings the schema up to date.
    pub async fn connect(url: &str, max_connections: u32) -> Result<PostgresStore, StoreError> {
        let options = PgConnectOptions::from_str(url)?;
        Self::open(options, max_connections).await
    }

    /// Like [`PostgresStore::connect`], from separate settings.
    pub async fn connect_with(
        settings: &PostgresSettings<'_>,
        max_connections: u32,
    ) -> Result<PostgresStore, StoreError> {
        let ssl_mode = PgSslMode::from_str(settings.ssl_mode)?;
        let mut options = PgConnectOptions::new()
            .host(settings.host)
            .port(settings.port)
            .database(settings.database)
            .username(settings.user)
            .ssl_mode(ssl_mode);
        if !settings.password.is_empty() {
            options = options.password(settings.password);
        }
        Self::open(options, max_connections).await
    }

    async fn open(
        options: PgConnectOptions,
        max_connections: u32,
    ) -> Result<PostgresStore, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await?;
        // The migrator keeps sqlx's default `locking = true`: it holds a Postgres advisory
        // lock while migrating, so replicas starting together take turns instead of racing
        // on the same DDL.
        MIGRATOR.run(&pool).await?;
        Ok(PostgresStore { pool })
    }
}

#[async_trait::async_trait]
impl RecordStore for PostgresStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn ping(&self) -> Result<(), StoreError> {
        sql::ping().execute(&self.pool).await?;
        Ok(())
    }

    async fn bootstrap_first_workspace(
        &self,
        workspace: NewWorkspace,
        token: NewToken,
    ) -> Result<Option<Workspace>, StoreError> {
        sql::bootstrap(&self.pool, &workspace, &token).await
    }

    async fn has_workspace(&self) -> Result<bool, StoreError> {
        Ok(sql::workspace_exists().fetch_one(&self.pool).await?)
    }

    async fn create_workspace(
        &self,
        workspace: NewWorkspace,
        token: NewToken,
    ) -> Result<Workspace, StoreError> {
        sql::create_workspace(&self.pool, &workspace, &token).await
    }

    async fn get_workspace(&self, id: &str) -> Result<Option<Workspace>, StoreError> {
        let row = sql::select_workspace(id).fetch_optional(&self.pool).await?;
        Ok(row.map(sql::WorkspaceRow::into_workspace))
    }

    async fn insert_token(&self, token: NewToken) -> Result<TokenRecord, StoreError> {
        sql::insert_token(&token)
            .execute(&self.pool)
            .await
            .map_err(|e| token_insert_error(e, &token))?;
        Ok(sql::stored_token(&token))
    }

    async fn find_token_by_hash(
        &self,
        hash: &[u8],
    ) -> Result<Option<(TokenRecord, Workspace)>, StoreError> {
        let row = sql::find_token_by_hash(hash)
            .fetch_optional(&self.pool)
            .await?;
        row.map(sql::TokenWithWorkspaceRow::into_pair).transpose()
    }

    async fn list_tokens(&self, workspace_id: &str) -> Result<Vec<TokenRecord>, StoreError> {
        let rows = sql::list_tokens(workspace_id).fetch_all(&self.pool).await?;
        rows.into_iter().map(sql::TokenRow::into_record).collect()
    }

    async fn revoke_token(
        &self,
        workspace_id: &str,
        token_id: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<TokenRecord>, StoreError> {
        let row = sql::revoke_token(workspace_id, token_id, at)
            .fetch_optional(&self.pool)
            .await?;
        row.map(sql::TokenRow::into_record).transpose()
    }

    async fn touch_token(&self, token_id: &str, at: DateTime<Utc>) -> Result<(), StoreError> {
        sql::touch_token(token_id, at).execute(&self.pool).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_take_the_advisory_lock() {
        assert!(super::MIGRATOR.locking);
    }
}
