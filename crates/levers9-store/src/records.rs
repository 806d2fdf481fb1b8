//! [`RecordStore`] for both databases: the SQL lives in `sql.rs`, written
//! once; each database only says which pool serves reads and which writes.

use chrono::{DateTime, Utc};

use crate::error::{token_insert_error, StoreError};
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
                sql::ping().execute(&self.$reader).await?;
                Ok(())
            }

            async fn bootstrap_first_workspace(
                &self,
                workspace: NewWorkspace,
                token: NewToken,
            ) -> Result<Option<Workspace>, StoreError> {
                sql::bootstrap(&self.$writer, &workspace, &token).await
            }

            async fn has_workspace(&self) -> Result<bool, StoreError> {
                Ok(sql::workspace_exists().fetch_one(&self.$reader).await?)
            }

            async fn create_workspace(
                &self,
                workspace: NewWorkspace,
                token: NewToken,
            ) -> Result<Workspace, StoreError> {
                sql::create_workspace(&self.$writer, &workspace, &token).await
            }

            async fn get_workspace(&self, id: &str) -> Result<Option<Workspace>, StoreError> {
                let row = sql::select_workspace(id)
                    .fetch_optional(&self.$reader)
                    .await?;
                Ok(row.map(sql::WorkspaceRow::into_workspace))
            }

            async fn first_workspace(&self) -> Result<Option<Workspace>, StoreError> {
                let row = sql::select_first_workspace()
                    .fetch_optional(&self.$reader)
                    .await?;
                Ok(row.map(sql::WorkspaceRow::into_workspace))
            }

            async fn insert_token(&self, token: NewToken) -> Result<TokenRecord, StoreError> {
                sql::insert_token(&token)
                    .execute(&self.$writer)
                    .await
                    .map_err(|e| token_insert_error(e, &token))?;
                Ok(sql::stored_token(&token))
            }

            async fn find_token_by_hash(
                &self,
                hash: &[u8],
            ) -> Result<Option<(TokenRecord, Workspace)>, StoreError> {
                let row = sql::find_token_by_hash(hash)
                    .fetch_optional(&self.$reader)
                    .await?;
                row.map(sql::TokenWithWorkspaceRow::into_pair).transpose()
            }

            async fn list_tokens(
                &self,
                workspace_id: &str,
            ) -> Result<Vec<TokenRecord>, StoreError> {
                let rows = sql::list_tokens(workspace_id)
                    .fetch_all(&self.$reader)
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
                    .fetch_optional(&self.$writer)
                    .await?;
                row.map(sql::TokenRow::into_record).transpose()
            }

            async fn touch_token(
                &self,
                token_id: &str,
                at: DateTime<Utc>,
            ) -> Result<(), StoreError> {
                sql::touch_token(token_id, at)
                    .execute(&self.$writer)
                    .await?;
                Ok(())
            }
        }
    };
}

record_store_impl!(PostgresStore, "postgres", pool, pool);
record_store_impl!(SqliteStore, "sqlite", reader, writer);
