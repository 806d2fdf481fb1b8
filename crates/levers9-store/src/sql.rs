//! The workspace and token queries, written once over [`Backend`] for both
//! databases, with their row decoding; and [`at_rest`], the time every query binds.
//!
//! SQLite accepts Postgres-style `$N` placeholders, so one statement text serves both;
//! only the schemas differ (see `migrations/`).

use chrono::{DateTime, SubsecRound, Utc};
use sqlx::FromRow;

use crate::backend::{Backend, Statement, Transactional};
use crate::error::{token_insert_error, workspace_insert_error, StoreError};
use crate::model::{NewToken, NewWorkspace, TokenRecord, Workspace};

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
fn stored_workspace(workspace: &NewWorkspace) -> Workspace {
    Workspace {
        id: workspace.id.clone(),
        name: workspace.name.clone(),
        created_at: at_rest(workspace.created_at),
    }
}

/// The record a successful insert of `token` leaves behind.
fn stored_token(token: &NewToken) -> TokenRecord {
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
pub(crate) async fn ping(pool: &impl Backend) -> Result<(), StoreError> {
    pool.execute(Statement::new("SELECT 1")).await?;
    Ok(())
}

/// Whether any workspace exists.
pub(crate) async fn has_workspace(pool: &impl Backend) -> Result<bool, StoreError> {
    let (exists,): (bool,) = pool
        .fetch_one(Statement::new("SELECT EXISTS (SELECT 1 FROM workspaces)"))
        .await?;
    Ok(exists)
}

/// Creates the first workspace and its token if the install has none; None otherwise.
///
/// Taking the claim before inserting the workspace means concurrent callers wait on
/// (Postgres) or queue behind (SQLite's single writer) the claim's primary key, and
/// never collide on the workspace name.
pub(crate) async fn bootstrap(
    pool: &impl Transactional,
    workspace: &NewWorkspace,
    token: &NewToken,
) -> Result<Option<Workspace>, StoreError> {
    let tx = pool.begin().await?;
    if has_workspace(&tx).await? {
        return Ok(None);
    }
    // RETURNING rather than a row count: Backend::execute reports none; a
    // row comes back only if this call took the claim.
    let claim = Statement::new(
        "INSERT INTO bootstrap_claim (singleton, claimed_at) VALUES (1, $1) \
         ON CONFLICT DO NOTHING RETURNING TRUE",
    )
    .bind(at_rest(workspace.created_at));
    let claimed: Option<(bool,)> = tx.fetch_optional(claim).await?;
    if claimed.is_none() {
        return Ok(None);
    }
    insert_workspace_with_token(&tx, workspace, token).await?;
    pool.commit(tx).await?;
    Ok(Some(stored_workspace(workspace)))
}

/// Creates a workspace and its first token in one transaction.
pub(crate) async fn create_workspace(
    pool: &impl Transactional,
    workspace: &NewWorkspace,
    token: &NewToken,
) -> Result<Workspace, StoreError> {
    let tx = pool.begin().await?;
    insert_workspace_with_token(&tx, workspace, token).await?;
    pool.commit(tx).await?;
    Ok(stored_workspace(workspace))
}

/// Inserts a workspace and its first token inside a transaction (`tx`).
async fn insert_workspace_with_token(
    tx: &impl Backend,
    workspace: &NewWorkspace,
    token: &NewToken,
) -> Result<(), StoreError> {
    let insert =
        Statement::new("INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3)")
            .bind(workspace.id.as_str())
            .bind(workspace.name.as_str())
            .bind(at_rest(workspace.created_at));
    tx.execute(insert)
        .await
        .map_err(|e| workspace_insert_error(e, workspace))?;
    insert_token(tx, token).await?;
    Ok(())
}

/// A workspace by id.
pub(crate) async fn get_workspace(
    pool: &impl Backend,
    id: &str,
) -> Result<Option<Workspace>, StoreError> {
    let select =
        Statement::new("SELECT id, name, created_at FROM workspaces WHERE id = $1").bind(id);
    let row: Option<WorkspaceRow> = pool.fetch_optional(select).await?;
    Ok(row.map(WorkspaceRow::into_workspace))
}

/// The install's first workspace (the one bootstrap made); the id breaks
/// ties as uuid v7 ids sort by time.
pub(crate) async fn first_workspace(pool: &impl Backend) -> Result<Option<Workspace>, StoreError> {
    let select = Statement::new(
        "SELECT id, name, created_at FROM workspaces ORDER BY created_at, id LIMIT 1",
    );
    let row: Option<WorkspaceRow> = pool.fetch_optional(select).await?;
    Ok(row.map(WorkspaceRow::into_workspace))
}

/// Inserts a token, on a pool or inside a caller's transaction; AlreadyExists
/// on a clash of id or hash.
pub(crate) async fn insert_token(
    pool: &impl Backend,
    token: &NewToken,
) -> Result<TokenRecord, StoreError> {
    let insert = Statement::new(
        "INSERT INTO tokens (id, workspace_id, token_type, description, hash, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(token.id.as_str())
    .bind(token.workspace_id.as_str())
    .bind(token.token_type.as_str())
    .bind(token.description.as_str())
    .bind(token.hash.as_slice())
    .bind(at_rest(token.created_at));
    pool.execute(insert)
        .await
        .map_err(|e| token_insert_error(e, token))?;
    Ok(stored_token(token))
}

/// The token with this hash, joined with its workspace.
pub(crate) async fn find_token_by_hash(
    pool: &impl Backend,
    hash: &[u8],
) -> Result<Option<(TokenRecord, Workspace)>, StoreError> {
    let select = Statement::new(concat!(
        "SELECT ",
        token_columns!(),
        ", workspaces.name AS workspace_name, workspaces.created_at AS workspace_created_at \
         FROM tokens JOIN workspaces ON workspaces.id = tokens.workspace_id \
         WHERE tokens.hash = $1"
    ))
    .bind(hash);
    let row: Option<TokenWithWorkspaceRow> = pool.fetch_optional(select).await?;
    row.map(TokenWithWorkspaceRow::into_pair).transpose()
}

/// The tokens of one workspace, oldest first; the id breaks ties as uuid v7 ids sort by time.
pub(crate) async fn list_tokens(
    pool: &impl Backend,
    workspace_id: &str,
) -> Result<Vec<TokenRecord>, StoreError> {
    let select = Statement::new(concat!(
        "SELECT ",
        token_columns!(),
        " FROM tokens WHERE workspace_id = $1 ORDER BY created_at, id"
    ))
    .bind(workspace_id);
    let rows: Vec<TokenRow> = pool.fetch_all(select).await?;
    rows.into_iter().map(TokenRow::into_record).collect()
}

/// Revokes a token of one workspace, keeping an earlier revocation time;
/// None if the workspace has no such token.
pub(crate) async fn revoke_token(
    pool: &impl Backend,
    workspace_id: &str,
    token_id: &str,
    at: DateTime<Utc>,
) -> Result<Option<TokenRecord>, StoreError> {
    let update = Statement::new(concat!(
        "UPDATE tokens SET revoked_at = COALESCE(revoked_at, $3) \
         WHERE workspace_id = $1 AND id = $2 RETURNING ",
        token_columns!()
    ))
    .bind(workspace_id)
    .bind(token_id)
    .bind(at_rest(at));
    let row: Option<TokenRow> = pool.fetch_optional(update).await?;
    row.map(TokenRow::into_record).transpose()
}

/// Moves a token's last use forward; requests finishing out of order never move it back.
pub(crate) async fn touch_token(
    pool: &impl Backend,
    token_id: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let update = Statement::new(
        "UPDATE tokens SET last_used_at = $2 \
         WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)",
    )
    .bind(token_id)
    .bind(at_rest(at));
    pool.execute(update).await?;
    Ok(())
}

/// A `workspaces` row.
#[derive(FromRow)]
struct WorkspaceRow {
    id: String,
    name: String,
    created_at: DateTime<Utc>,
}

impl WorkspaceRow {
    /// The workspace this row holds.
    fn into_workspace(self) -> Workspace {
        Workspace {
            id: self.id,
            name: self.name,
            created_at: self.created_at,
        }
    }
}

/// A `tokens` row, without the hash.
#[derive(FromRow)]
struct TokenRow {
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
    fn into_record(self) -> Result<TokenRecord, StoreError> {
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
struct TokenWithWorkspaceRow {
    #[sqlx(flatten)]
    token: TokenRow,
    workspace_name: String,
    workspace_created_at: DateTime<Utc>,
}

impl TokenWithWorkspaceRow {
    /// The token and its workspace.
    fn into_pair(self) -> Result<(TokenRecord, Workspace), StoreError> {
        let token = self.token.into_record()?;
        let workspace = Workspace {
            id: token.workspace_id.clone(),
            name: self.workspace_name,
            created_at: self.workspace_created_at,
        };
        Ok((token, workspace))
    }
}
