//! Values sealed at rest (workspace secrets, workspace storage credentials):
//! the store keeps only ciphertext and the id of the key that sealed it, and
//! offers what key rotation needs: a walk over the rows not on a key, and a
//! compare-and-swap re-seal that never overwrites a concurrent change.

use std::fmt;

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use crate::backend::{Backend, Statement};
use crate::error::StoreError;
use crate::postgres::PostgresStore;
use crate::sql::at_rest;
use crate::sqlite::SqliteStore;

/// What a sealed value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SealedKind {
    /// A workspace secret, handed to containers as an environment variable.
    Secret,
    /// A workspace's object storage credentials.
    StorageCredentials,
}

impl SealedKind {
    /// The kind as the `kind` column and the seal's associated data spell it:
    /// `secret` or `storage`.
    pub fn as_str(self) -> &'static str {
        match self {
            SealedKind::Secret => "secret",
            SealedKind::StorageCredentials => "storage",
        }
    }

    fn parse(text: &str) -> Result<SealedKind, StoreError> {
        match text {
            "secret" => Ok(SealedKind::Secret),
            "storage" => Ok(SealedKind::StorageCredentials),
            other => Err(StoreError::Corrupt(format!(
                "unknown sealed kind {other:?}"
            ))),
        }
    }
}

/// Which row a sealed value is: also what its seal is bound to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SealedId {
    /// Secret or storage credentials; the same name may be used by both.
    pub kind: SealedKind,
    /// The workspace that owns it; part of what the seal is bound to, so a
    /// ciphertext copied to another workspace's row does not open.
    pub workspace_id: String,
    /// Its name within the workspace and kind.
    pub name: String,
}

/// A sealed value with its ciphertext.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedValue {
    /// Which row.
    pub id: SealedId,
    /// The id of the key that sealed it.
    pub key_id: String,
    /// nonce || ciphertext || tag.
    pub sealed: Vec<u8>,
    /// When it was first stored.
    pub created_at: DateTime<Utc>,
    /// When its value last changed (a re-seal does not count).
    pub updated_at: DateTime<Utc>,
}

impl fmt::Debug for SealedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealedValue")
            .field("id", &self.id)
            .field("key_id", &self.key_id)
            .field("sealed", &format_args!("<{} bytes>", self.sealed.len()))
            .finish()
    }
}

/// A sealed value without its ciphertext, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedInfo {
    /// Which row.
    pub id: SealedId,
    /// The id of the key that sealed it.
    pub key_id: String,
    /// When it was first stored.
    pub created_at: DateTime<Utc>,
    /// When its value last changed.
    pub updated_at: DateTime<Utc>,
}

/// Sealed values, whichever database holds them.
#[async_trait::async_trait]
pub trait SealedStore: Send + Sync + 'static {
    /// Stores a new value; AlreadyExists if the row exists.
    async fn insert_sealed(&self, value: SealedValue) -> Result<(), StoreError>;
    /// Creates or replaces a value.
    async fn put_sealed(&self, value: SealedValue) -> Result<(), StoreError>;
    /// Replaces the value of an existing row; None if there is none.
    async fn update_sealed(
        &self,
        id: &SealedId,
        key_id: &str,
        sealed: &[u8],
        at: DateTime<Utc>,
    ) -> Result<Option<SealedInfo>, StoreError>;
    /// One value.
    async fn get_sealed(&self, id: &SealedId) -> Result<Option<SealedValue>, StoreError>;
    /// The values of one kind in one workspace, by name, without ciphertext.
    async fn list_sealed(
        &self,
        kind: SealedKind,
        workspace_id: &str,
    ) -> Result<Vec<SealedInfo>, StoreError>;
    /// Deletes a value; true if it existed.
    async fn delete_sealed(&self, id: &SealedId) -> Result<bool, StoreError>;
    /// Up to `limit` values not sealed with `key_id`, in id order, after `after`.
    async fn sealed_not_on_key(
        &self,
        key_id: &str,
        after: Option<&SealedId>,
        limit: u32,
    ) -> Result<Vec<SealedValue>, StoreError>;
    /// Swaps in a re-sealed form of `old` only if the row still holds exactly
    /// `old`; false if it changed meanwhile (another replica re-sealed it, or
    /// a user updated it), in which case nothing is written.
    async fn reseal(
        &self,
        old: &SealedValue,
        key_id: &str,
        sealed: &[u8],
    ) -> Result<bool, StoreError>;
    /// How many values each key sealed.
    async fn count_sealed_by_key(&self) -> Result<Vec<(String, u64)>, StoreError>;
}

const COLUMNS: &str = "kind, workspace_id, name, key_id, sealed, created_at, updated_at";
const INFO_COLUMNS: &str = "kind, workspace_id, name, key_id, created_at, updated_at";

/// A row without its ciphertext.
#[derive(FromRow)]
struct InfoRow {
    kind: String,
    workspace_id: String,
    name: String,
    key_id: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl InfoRow {
    fn into_info(self) -> Result<SealedInfo, StoreError> {
        Ok(SealedInfo {
            id: SealedId {
                kind: SealedKind::parse(&self.kind)?,
                workspace_id: self.workspace_id,
                name: self.name,
            },
            key_id: self.key_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

/// A row with its ciphertext, for reads that open the value.
#[derive(FromRow)]
struct ValueRow {
    #[sqlx(flatten)]
    info: InfoRow,
    sealed: Vec<u8>,
}

impl ValueRow {
    fn into_value(self) -> Result<SealedValue, StoreError> {
        let info = self.info.into_info()?;
        Ok(SealedValue {
            id: info.id,
            key_id: info.key_id,
            sealed: self.sealed,
            created_at: info.created_at,
            updated_at: info.updated_at,
        })
    }
}

/// The SQL, written once for both databases (SQLite takes `$N` placeholders
/// and row-value comparisons too).
mod query {
    use super::*;

    pub(super) async fn insert(
        pool: &impl Backend,
        v: &SealedValue,
        upsert: bool,
    ) -> Result<(), StoreError> {
        let on_conflict = if upsert {
            " ON CONFLICT (kind, workspace_id, name) DO UPDATE SET key_id = excluded.key_id, \
             sealed = excluded.sealed, updated_at = excluded.updated_at"
        } else {
            ""
        };
        let insert = Statement::new(format!(
            "INSERT INTO sealed_values ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7){on_conflict}"
        ))
        .bind(v.id.kind.as_str())
        .bind(v.id.workspace_id.as_str())
        .bind(v.id.name.as_str())
        .bind(v.key_id.as_str())
        .bind(v.sealed.as_slice())
        .bind(at_rest(v.created_at))
        .bind(at_rest(v.updated_at));
        pool.execute(insert)
            .await
            .map_err(|e| match e.as_database_error() {
                Some(db) if db.is_unique_violation() => {
                    StoreError::AlreadyExists(format!("{} {:?}", v.id.kind.as_str(), v.id.name))
                }
                _ => StoreError::Database(e),
            })
    }

    pub(super) async fn update(
        pool: &impl Backend,
        id: &SealedId,
        key_id: &str,
        sealed: &[u8],
        at: DateTime<Utc>,
    ) -> Result<Option<SealedInfo>, StoreError> {
        let update = Statement::new(format!(
            "UPDATE sealed_values SET key_id = $4, sealed = $5, updated_at = $6 \
             WHERE kind = $1 AND workspace_id = $2 AND name = $3 RETURNING {INFO_COLUMNS}"
        ))
        .bind(id.kind.as_str())
        .bind(id.workspace_id.as_str())
        .bind(id.name.as_str())
        .bind(key_id)
        .bind(sealed)
        .bind(at_rest(at));
        let row: Option<InfoRow> = pool.fetch_optional(update).await?;
        row.map(InfoRow::into_info).transpose()
    }

    pub(super) async fn get(
        pool: &impl Backend,
        id: &SealedId,
    ) -> Result<Option<SealedValue>, StoreError> {
        let select = Statement::new(format!(
            "SELECT {COLUMNS} FROM sealed_values WHERE kind = $1 AND workspace_id = $2 AND name = $3"
        ))
        .bind(id.kind.as_str())
        .bind(id.workspace_id.as_str())
        .bind(id.name.as_str());
        let row: Option<ValueRow> = pool.fetch_optional(select).await?;
        row.map(ValueRow::into_value).transpose()
    }

    pub(super) async fn list(
        pool: &impl Backend,
        kind: SealedKind,
        workspace_id: &str,
    ) -> Result<Vec<SealedInfo>, StoreError> {
        let select = Statement::new(format!(
            "SELECT {INFO_COLUMNS} FROM sealed_values WHERE kind = $1 AND workspace_id = $2 \
             ORDER BY name"
        ))
        .bind(kind.as_str())
        .bind(workspace_id);
        let rows: Vec<InfoRow> = pool.fetch_all(select).await?;
        rows.into_iter().map(InfoRow::into_info).collect()
    }

    pub(super) async fn delete(pool: &impl Backend, id: &SealedId) -> Result<bool, StoreError> {
        // RETURNING rather than a row count: the generic QueryResult has no rows_affected().
        let delete = Statement::new(
            "DELETE FROM sealed_values WHERE kind = $1 AND workspace_id = $2 AND name = $3 \
             RETURNING name",
        )
        .bind(id.kind.as_str())
        .bind(id.workspace_id.as_str())
        .bind(id.name.as_str());
        let gone: Option<(String,)> = pool.fetch_optional(delete).await?;
        Ok(gone.is_some())
    }

    pub(super) async fn not_on_key(
        pool: &impl Backend,
        key_id: &str,
        after: Option<&SealedId>,
        limit: u32,
    ) -> Result<Vec<SealedValue>, StoreError> {
        // Keyset pagination: rows that cannot be re-sealed (an unknown key) stay
        // behind the cursor instead of being fetched again forever.
        let (kind, workspace, name) = after
            .map(|a| (a.kind.as_str(), a.workspace_id.as_str(), a.name.as_str()))
            .unwrap_or(("", "", ""));
        let select = Statement::new(format!(
            "SELECT {COLUMNS} FROM sealed_values WHERE key_id <> $1 \
             AND (kind, workspace_id, name) > ($2, $3, $4) \
             ORDER BY kind, workspace_id, name LIMIT $5"
        ))
        .bind(key_id)
        .bind(kind)
        .bind(workspace)
        .bind(name)
        .bind(i64::from(limit));
        let rows: Vec<ValueRow> = pool.fetch_all(select).await?;
        rows.into_iter().map(ValueRow::into_value).collect()
    }

    pub(super) async fn reseal(
        pool: &impl Backend,
        old: &SealedValue,
        key_id: &str,
        sealed: &[u8],
    ) -> Result<bool, StoreError> {
        let swap = Statement::new(
            "UPDATE sealed_values SET key_id = $4, sealed = $5 \
             WHERE kind = $1 AND workspace_id = $2 AND name = $3 AND key_id = $6 AND sealed = $7 \
             RETURNING name",
        )
        .bind(old.id.kind.as_str())
        .bind(old.id.workspace_id.as_str())
        .bind(old.id.name.as_str())
        .bind(key_id)
        .bind(sealed)
        .bind(old.key_id.as_str())
        .bind(old.sealed.as_slice());
        let swapped: Option<(String,)> = pool.fetch_optional(swap).await?;
        Ok(swapped.is_some())
    }

    pub(super) async fn count_by_key(
        pool: &impl Backend,
    ) -> Result<Vec<(String, u64)>, StoreError> {
        let rows: Vec<(String, i64)> = pool
            .fetch_all(Statement::new(
                "SELECT key_id, COUNT(*) FROM sealed_values GROUP BY key_id ORDER BY key_id",
            ))
            .await?;
        Ok(rows
            .into_iter()
            .map(|(key, n)| (key, u64::try_from(n).unwrap_or(0)))
            .collect())
    }
}

/// Implements [`SealedStore`] over a reader and a writer pool (the same pool
/// on Postgres).
macro_rules! sealed_store_impl {
    ($store:ty, $reader:ident, $writer:ident) => {
        #[async_trait::async_trait]
        impl SealedStore for $store {
            async fn insert_sealed(&self, value: SealedValue) -> Result<(), StoreError> {
                query::insert(&self.$writer, &value, false).await
            }
            async fn put_sealed(&self, value: SealedValue) -> Result<(), StoreError> {
                query::insert(&self.$writer, &value, true).await
            }
            async fn update_sealed(
                &self,
                id: &SealedId,
                key_id: &str,
                sealed: &[u8],
                at: DateTime<Utc>,
            ) -> Result<Option<SealedInfo>, StoreError> {
                query::update(&self.$writer, id, key_id, sealed, at).await
            }
            async fn get_sealed(&self, id: &SealedId) -> Result<Option<SealedValue>, StoreError> {
                query::get(&self.$reader, id).await
            }
            async fn list_sealed(
                &self,
                kind: SealedKind,
                workspace_id: &str,
            ) -> Result<Vec<SealedInfo>, StoreError> {
                query::list(&self.$reader, kind, workspace_id).await
            }
            async fn delete_sealed(&self, id: &SealedId) -> Result<bool, StoreError> {
                query::delete(&self.$writer, id).await
            }
            async fn sealed_not_on_key(
                &self,
                key_id: &str,
                after: Option<&SealedId>,
                limit: u32,
            ) -> Result<Vec<SealedValue>, StoreError> {
                query::not_on_key(&self.$reader, key_id, after, limit).await
            }
            async fn reseal(
                &self,
                old: &SealedValue,
                key_id: &str,
                sealed: &[u8],
            ) -> Result<bool, StoreError> {
                query::reseal(&self.$writer, old, key_id, sealed).await
            }
            async fn count_sealed_by_key(&self) -> Result<Vec<(String, u64)>, StoreError> {
                query::count_by_key(&self.$reader).await
            }
        }
    };
}

sealed_store_impl!(PostgresStore, pool, pool);
sealed_store_impl!(SqliteStore, reader, writer);
