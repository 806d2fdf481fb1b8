//! The production backend: PostgreSQL, shared by every controlplane replica.

use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgSslMode};
use sqlx::Connection;

use crate::error::StoreError;

/// The Postgres schema, embedded at build time.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// How long a call waits for a pooled connection before failing, so an exhausted
/// pool or an unreachable server surfaces as an error instead of a hang.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// A pooled connection idle this long is pinged before it is handed out.
const PING_IDLE: Duration = Duration::from_secs(1);

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
    /// TCP port (5432 unless the config says otherwise).
    pub port: u16,
    /// The database to use; it must exist: connecting creates or migrates the
    /// schema in it.
    pub database: &'a str,
    /// The role to log in as; it must be allowed to create the schema's tables.
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
            // sqlx pings every connection it hands out by default: a round
            // trip before each transaction, a fifth of a warm function
            // call's. Only a connection idle for a while is pinged; a dead
            // one that slips through fails its statement and is dropped.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for >= PING_IDLE {
                        conn.ping().await?;
                    }
                    Ok(true)
                })
            })
            .connect_with(options)
            .await?;
        // The migrator keeps sqlx's default `locking = true`: it holds a Postgres advisory
        // lock while migrating, so replicas starting together take turns instead of racing
        // on the same DDL.
        MIGRATOR.run(&pool).await?;
        Ok(PostgresStore { pool })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_take_the_advisory_lock() {
        assert!(super::MIGRATOR.locking);
    }
}
