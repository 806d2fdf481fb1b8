//! What can go wrong in the store.

use std::path::PathBuf;

use crate::model::{NewToken, NewWorkspace};

/// An error from a [`RecordStore`](crate::RecordStore), [`SealedStore`](crate::SealedStore)
/// or [`FunctionStore`](crate::FunctionStore). Messages never contain token hashes.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A record with the same unique key already exists; the text names it.
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// The database refused or failed the operation.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// The schema could not be brought up to date.
    #[error("migration error: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// The caller asked for something the records cannot hold; the text says what.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// A stored row could not be read back as a record.
    #[error("corrupt record: {0}")]
    Corrupt(String),
    /// The directory for the SQLite file could not be created.
    #[error("cannot create directory {}: {source}", path.display())]
    CreateDir {
        /// The directory that could not be created.
        path: PathBuf,
        /// Why it could not.
        source: std::io::Error,
    },
}

impl StoreError {
    /// Whether the database could not be reached, or dropped the connection
    /// (restarting, failing over, a connection it terminated), or gave up
    /// the transaction for another's sake: the same call may succeed in a
    /// moment, on a fresh connection. Not for what the database refused.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Database(sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut) => true,
            StoreError::Database(sqlx::Error::Database(db)) => {
                db.code().is_some_and(|code| transient_sqlstate(&code))
            }
            _ => false,
        }
    }
}

/// PostgreSQL's SQLSTATEs of a lost connection (class 08), a server
/// shutting down or starting (57P01-57P03), a serialization failure and a
/// deadlock. SQLite's codes are numbers, none of these.
fn transient_sqlstate(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "40001" | "40P01")
}

/// Maps a failed workspace insert, telling a name clash from an id clash.
pub(crate) fn workspace_insert_error(err: sqlx::Error, workspace: &NewWorkspace) -> StoreError {
    match unique_violation_hint(&err) {
        Some(hint) if hint.contains("name") => {
            StoreError::AlreadyExists(format!("workspace named {:?}", workspace.name))
        }
        Some(_) => StoreError::AlreadyExists(format!("workspace with id {:?}", workspace.id)),
        None => StoreError::Database(err),
    }
}

/// Maps a failed token insert; a hash clash is described without the hash.
pub(crate) fn token_insert_error(err: sqlx::Error, token: &NewToken) -> StoreError {
    match unique_violation_hint(&err) {
        Some(hint) if hint.contains("hash") => {
            StoreError::AlreadyExists("a token with the same secret".to_owned())
        }
        Some(_) => StoreError::AlreadyExists(format!("token with id {:?}", token.id)),
        None => StoreError::Database(err),
    }
}

/// For a unique violation, text naming the violated key; None for any other error.
fn unique_violation_hint(err: &sqlx::Error) -> Option<&str> {
    match err {
        // Postgres names the constraint (e.g. `workspaces_name_key`); SQLite has no
        // constraint names and only says `UNIQUE constraint failed: workspaces.name`.
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            Some(db.constraint().unwrap_or_else(|| db.message()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_connections_are_transient_and_refusals_are_not() {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(StoreError::Database(sqlx::Error::Io(reset)).is_transient());
        assert!(StoreError::Database(sqlx::Error::PoolTimedOut).is_transient());
        assert!(!StoreError::Database(sqlx::Error::RowNotFound).is_transient());
        assert!(!StoreError::AlreadyExists("task".into()).is_transient());
        assert!(!StoreError::Invalid("bad".into()).is_transient());
        for code in ["08006", "08P01", "57P01", "40001", "40P01"] {
            assert!(transient_sqlstate(code), "{code}");
        }
        for code in ["23505", "42P01", "5", "8"] {
            assert!(!transient_sqlstate(code), "{code}");
        }
    }
}
