//! What both backends share: statement text with its bindings, and row decoding.
//!
//! SQLite accepts Postgres-style `$N` placeholders, so one statement text serves both;
//! only the schemas differ (see `migrations/`).

use chrono::{DateTime, SubsecRound, Utc};
use sqlx::query::{Query, QueryAs, QueryScalar};
use sqlx::{Database, Encode, Executor, FromRow, IntoArguments, Pool, Type};

use crate::error::{token_insert_error, workspace_insert_error, StoreError};
use crate::model::{NewToken, NewWorkspace, TokenRecord, Workspace};

/// A statement whose result is only a row count.
type Statement<'q, DB> = Query<'q, DB, <DB as Database>::Arguments<'q>>;
/// A statement that yields rows of `O`.
type Select<'q, DB, O> = QueryAs<'q, DB, O, <DB as Database>::Arguments<'q>>;
/// A statement that yields one column of `O`.
type Scalar<'q, DB, O> = QueryScalar<'q, DB, O, <DB as Database>::Arguments<'q>>;

/// The token columns every token query yields, in `TokenRow` order; qualified so
/// that the join with `workspaces` stays unambiguous.
macro_rules! token_columns {
    () => {
        "tokens.id AS id, tokens.workspace_id AS workspace_id, \
         tokens.token_type AS token_type, tokens.description AS description, \
         tokens.created_at AS created_at, tokens.last_used_at AS last_used_at, \
         tokens.revoked_at AS revoked_at"
    };
}

/// A time as the store keeps it: Postgres holds microseconds, so both backends cut
/// to that and hand back exactly what a later read returns.
pub(crate) fn at_rest(t: DateTime<Utc>) -> DateTime<Utc> {
    t.trunc_subsecs(6)
}

/// The record a successful insert of `workspace` leaves behind.
pub(crate) fn stored_workspace(workspace: &NewWorkspace) -> Workspace {
    Workspace {
        id: workspace.id.clone(),
        name: workspace.name.clone(),
        created_at: at_rest(workspace.created_at),
    }
}

/// The record a successful insert of `token` leaves behind.
pub(crate) fn stored_token(token: &NewToken) -> TokenRecord {
    TokenRecord {
        id: token.id.clone(),
        workspace_id: token.workspace_id.clone(),
        token_type: token.token_type,
        description: token.description.clone(),
        created_at: at_rest(token.created_at),
        last_used_at: None,
        revoked_at: None,
    }
}

/// A cheap round trip.
pub(crate) fn ping<'q, DB: Database>() -> Statement<'q, DB> {
    sqlx::query("SELECT 1")
}

/// Whether any workspace exists.
pub(crate) fn workspace_exists<'q, DB>() -> Scalar<'q, DB, bool>
where
    DB: Database,
    (bool,): for<'r> FromRow<'r, DB::Row>,
{
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM workspaces)")
}

/// Takes the single bootstrap claim, yielding a row only if this call took it.
// RETURNING rather than a row count: the generic QueryResult has no rows_affected().
pub(crate) fn claim_bootstrap<'q, DB>(at: DateTime<Utc>) -> Scalar<'q, DB, bool>
where
    DB: Database,
    DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    (bool,): for<'r> FromRow<'r, DB::Row>,
{
    sqlx::query_scalar(
        "INSERT INTO bootstrap_claim (singleton, claimed_at) VALUES (1, $1) \
         ON CONFLICT DO NOTHING RETURNING TRUE",
    )
    .bind(at_rest(at))
}

/// Inserts a workspace.
pub(crate) fn insert_workspace<'q, DB>(workspace: &'q NewWorkspace) -> Statement<'q, DB>
where
    DB: Database,
    &'q str: Encode<'q, DB> + Type<DB>,
    DateTime<Utc>: Encode<'q, DB> + Type<DB>,
{
    sqlx::query("INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3)")
        .bind(workspace.id.as_str())
        .bind(workspace.name.as_str())
        .bind(at_rest(workspace.created_at))
}

/// A workspace by id.
pub(crate) fn select_workspace<'q, DB>(id: &'q str) -> Select<'q, DB, WorkspaceRow>
where
    DB: Database,
    &'q str: Encode<'q, DB> + Type<DB>,
    WorkspaceRow: for<'r> FromRow<'r, DB::Row>,
{
    sqlx::query_as("SELECT id, name, created_at FROM workspaces WHERE id = $1").bind(id)
}

/// The oldest workspace.
pub(crate) fn select_first_workspace<'q, DB>() -> Select<'q, DB, WorkspaceRow>
where
    DB: Database,
    WorkspaceRow: for<'r> FromRow<'r, DB::Row>,
{
    sqlx::query_as("SELECT id, name, created_at FROM workspaces ORDER BY created_at, id LIMIT 1")
}

/// Inserts a token.
pub(crate) fn insert_token<'q, DB>(token: &'q NewToken) -> Statement<'q, DB>
where
    DB: Database,
    &'q str: Encode<'q, DB> + Type<DB>,
    &'q [u8]: Encode<'q, DB> + Type<DB>,
    DateTime<Utc>: Encode<'q, DB> + Type<DB>,
{
    sqlx::query(
        "INSERT INTO tokens (id, workspace_id, token_type, description, hash, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(token.id.as_str())
    .bind(token.workspace_id.as_str())
    .bind(token.token_type.as_str())
    .bind(token.description.as_str())
    .bind(token.hash.as_slice())
    .bind(at_rest(token.created_at))
}

/// The token with this hash, joined with its workspace.
pub(crate) fn find_token_by_hash<'q, DB>(hash: &'q [u8]) -> Select<'q, DB, TokenWithWorkspaceRow>
where
    DB: Database,
    &'q [u8]: Encode<'q, DB> + Type<DB>,
    TokenWithWorkspaceRow: for<'r> FromRow<'r, DB::Row>,
{
    sqlx::query_as(concat!(
        "SELECT ",
        token_columns!(),
        ", workspaces.name AS workspace_name, workspaces.created_at AS workspace_created_at \
         FROM tokens JOIN workspaces ON workspaces.id = tokens.workspace_id \
         WHERE tokens.hash = $1"
    ))
    .bind(hash)
}

/// The tokens of one workspace, oldest first; the id breaks ties as uuid v7 ids sort by time.
pub(crate) fn list_tokens<'q, DB>(workspace_id: &'q str) -> Select<'q, DB, TokenRow>
where
    DB: Database,
    &'q str: Encode<'q, DB> + Type<DB>,
    TokenRow: for<'r> FromRow<'r, DB::Row>,
{
    sqlx::query_as(concat!(
        "SELECT ",
        token_columns!(),
        " FROM tokens WHERE workspace_id = $1 ORDER BY created_at, id"
    ))
    .bind(workspace_id)
}

/// Revokes a token of one workspace, keeping an earlier revocation time.
pub(crate) fn revoke_token<'q, DB>(
    workspace_id: &'q str,
    token_id: &'q str,
    at: DateTime<Utc>,
) -> Select<'q, DB, TokenRow>
where
    DB: Database,
    &'q str: Encode<'q, DB> + Type<DB>,
    DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    TokenRow: for<'r> FromRow<'r, DB::Row>,
{
    sqlx::query_as(concat!(
        "UPDATE tokens SET revoked_at = COALESCE(revoked_at, $3) \
         WHERE workspace_id = $1 AND id = $2 RETURNING ",
        token_columns!()
    ))
    .bind(workspace_id)
    .bind(token_id)
    .bind(at_rest(at))
}

/// Moves a token's last use forward; requests finishing out of order never move it back.
pub(crate) fn touch_token<'q, DB>(token_id: &'q str, at: DateTime<Utc>) -> Statement<'q, DB>
where
    DB: Database,
    &'q str: Encode<'q, DB> + Type<DB>,
    DateTime<Utc>: Encode<'q, DB> + Type<DB>,
{
    sqlx::query(
        "UPDATE tokens SET last_used_at = $2 \
         WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)",
    )
    .bind(token_id)
    .bind(at_rest(at))
}

/// Creates the first workspace and its token if the install has none; None otherwise.
///
/// Taking the claim before inserting the workspace means concurrent callers wait on
/// (Postgres) or queue behind (SQLite's single writer) the claim's primary key, and
/// never collide on the workspace name.
pub(crate) async fn bootstrap<DB>(
    pool: &Pool<DB>,
    workspace: &NewWorkspace,
    token: &NewToken,
) -> Result<Option<Workspace>, StoreError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> &'q [u8]: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    (bool,): for<'r> FromRow<'r, DB::Row>,
{
    let mut tx = pool.begin().await?;
    if workspace_exists().fetch_one(&mut *tx).await? {
        return Ok(None);
    }
    let claimed = claim_bootstrap(workspace.created_at)
        .fetch_optional(&mut *tx)
        .await?;
    if claimed.is_none() {
        return Ok(None);
    }
    insert_workspace_with_token(&mut tx, workspace, token).await?;
    tx.commit().await?;
    Ok(Some(stored_workspace(workspace)))
}

/// Creates a workspace and its first token in one transaction.
pub(crate) async fn create_workspace<DB>(
    pool: &Pool<DB>,
    workspace: &NewWorkspace,
    token: &NewToken,
) -> Result<Workspace, StoreError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> &'q [u8]: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
{
    let mut tx = pool.begin().await?;
    insert_workspace_with_token(&mut tx, workspace, token).await?;
    tx.commit().await?;
    Ok(stored_workspace(workspace))
}

/// Inserts a workspace and its first token on a connection already in a transaction.
async fn insert_workspace_with_token<DB>(
    conn: &mut DB::Connection,
    workspace: &NewWorkspace,
    token: &NewToken,
) -> Result<(), StoreError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> &'q [u8]: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
{
    insert_workspace(workspace)
        .execute(&mut *conn)
        .await
        .map_err(|e| workspace_insert_error(e, workspace))?;
    insert_token(token)
        .execute(&mut *conn)
        .await
        .map_err(|e| token_insert_error(e, token))?;
    Ok(())
}

/// A `workspaces` row.
#[derive(FromRow)]
pub(crate) struct WorkspaceRow {
    id: String,
    name: String,
    created_at: DateTime<Utc>,
}

impl WorkspaceRow {
    /// The workspace this row holds.
    pub(crate) fn into_workspace(self) -> Workspace {
        Workspace {
            id: self.id,
            name: self.name,
            created_at: self.created_at,
        }
    }
}

/// A `tokens` row, without the hash.
#[derive(FromRow)]
pub(crate) struct TokenRow {
    id: String,
    workspace_id: String,
    token_type: String,
    description: String,
    created_at: DateTime<Utc>,
    last_used_at: Option<DateTime<Utc>>,
    revoked_at: Option<DateTime<Utc>>,
}

impl TokenRow {
    /// The token this row holds; Corrupt if its type is not one this build knows.
    pub(crate) fn into_record(self) -> Result<TokenRecord, StoreError> {
        let token_type = self
            .token_type
            .parse()
            .map_err(|e| StoreError::Corrupt(format!("token {:?}: {e}", self.id)))?;
        Ok(TokenRecord {
            id: self.id,
            workspace_id: self.workspace_id,
            token_type,
            description: self.description,
            created_at: self.created_at,
            last_used_at: self.last_used_at,
            revoked_at: self.revoked_at,
        })
    }
}

/// A `tokens` row joined with its workspace.
#[derive(FromRow)]
pub(crate) struct TokenWithWorkspaceRow {
    #[sqlx(flatten)]
    token: TokenRow,
    workspace_name: String,
    workspace_created_at: DateTime<Utc>,
}

impl TokenWithWorkspaceRow {
    /// The token and its workspace.
    pub(crate) fn into_pair(self) -> Result<(TokenRecord, Workspace), StoreError> {
        let token = self.token.into_record()?;
        let workspace = Workspace {
            id: token.workspace_id.clone(),
            name: self.workspace_name,
            created_at: self.workspace_created_at,
        };
        Ok((token, workspace))
    }
}
