//! [`RecordStore`] for both databases: the SQL lives in `sql.rs`, written
//! once over `Backend`; each database only says which pool serves reads and
//! which writes.

use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::{NewToken, NewWorkspace, TokenRecord, Workspace};
use crate::postgres::PostgresStore;
use crate::sqlite::SqliteStore;
use crate::{sql, RecordStore};

/// Implements [`RecordStore`] over a reader and a writer pool (the same pool
/// on Postgres).
macro_rules! record_store_impl {
    ($store:ty, $backend:literal, $reader:ident, $writer:ident) => {
        #[async_trait::async_trait]
        impl RecordStore for $store {
            fn backend(&self) -> &'static str {
                $backend
            }

            async fn ping(&self) -> Result<(), StoreError> {
                sql::ping(&self.$reader).await
            }

            async fn bootstrap_first_workspace(
                &self,
                workspace: NewWorkspace,
                token: NewToken,
            ) -> Result<Option<Workspace>, StoreError> {
                sql::bootstrap(&self.$writer, &workspace, &token).await
            }

            async fn has_workspace(&self) -> Result<bool, StoreError> {
                sql::has_workspace(&self.$reader).await
            }

            async fn create_workspace(
                &self,
                workspace: NewWorkspace,
                token: NewToken,
            ) -> Result<Workspace, StoreError> {
                sql::create_workspace(&self.$writer, &workspace, &token).await
            }

            async fn get_workspace(&self, id: &str) -> Result<Option<Workspace>, StoreError> {
                sql::get_workspace(&self.$reader, id).await
            }

            async fn first_workspace(&self) -> Result<Option<Workspace>, StoreError> {
                sql::first_workspace(&self.$reader).await
            }

            async fn insert_token(&self, token: NewToken) -> Result<TokenRecord, StoreError> {
                sql::insert_token(&self.$writer, &token).await
            }

            async fn find_token_by_hash(
                &self,
                hash: &[u8],
            ) -> Result<Option<(TokenRecord, Workspace)>, StoreError> {
                sql::find_token_by_hash(&self.$reader, hash).await
            }

            async fn list_tokens(
                &self,
                workspace_id: &str,
            ) -> Result<Vec<TokenRecord>, StoreError> {
                sql::list_tokens(&self.$reader, workspace_id).await
            }

            async fn revoke_token(
                &self,
                workspace_id: &str,
                token_id: &str,
                at: DateTime<Utc>,
            ) -> Result<Option<TokenRecord>, StoreError> {
                sql::revoke_token(&self.$writer, workspace_id, token_id, at).await
            }

            async fn touch_token(
                &self,
                token_id: &str,
                at: DateTime<Utc>,
            ) -> Result<(), StoreError> {
                sql::touch_token(&self.$writer, token_id, at).await
            }
        }
    };
}

record_store_impl!(PostgresStore, "postgres", pool, pool);
record_store_impl!(SqliteStore, "sqlite", reader, writer);
