//! Deployed apps: versions and the stubs of their functions (see
//! `migrations/*/0006_deployments.sql`).

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use crate::backend::{Backend, Statement, Transactional};
use crate::error::StoreError;
use crate::function_model::{DeploymentRecord, NewDeployment};
use crate::sql::at_rest;

/// `$columns` of the current version's functions (`ROW` for a
/// `DeploymentRow`); the caller adds conditions on `d` and `f` after the
/// trailing AND.
macro_rules! current_functions {
    (ROW) => {
        current_functions!(
            "d.workspace_id, d.app_name, f.function_name, f.stub_id, d.version, \
             d.deployed_by, d.created_at"
        )
    };
    ($columns:literal) => {
        concat!(
            "SELECT ",
            $columns,
            " FROM deployments d JOIN deployment_functions f \
         ON f.workspace_id = d.workspace_id AND f.app_name = d.app_name \
         AND f.version = d.version \
         WHERE d.version = (SELECT MAX(m.version) FROM deployments m \
         WHERE m.workspace_id = d.workspace_id AND m.app_name = d.app_name) AND "
        )
    };
}

#[derive(FromRow)]
pub(crate) struct DeploymentRow {
    workspace_id: String,
    app_name: String,
    function_name: String,
    stub_id: String,
    version: i64,
    deployed_by: String,
    created_at: DateTime<Utc>,
}

impl DeploymentRow {
    fn into_record(self) -> Result<DeploymentRecord, StoreError> {
        let version = u32::try_from(self.version).map_err(|_| {
            StoreError::Corrupt(format!("app {:?}: version {}", self.app_name, self.version))
        })?;
        Ok(DeploymentRecord {
            workspace_id: self.workspace_id,
            app_name: self.app_name,
            function_name: self.function_name,
            stub_id: self.stub_id,
            version,
            deployed_by: self.deployed_by,
            created_at: self.created_at,
        })
    }
}

/// AlreadyExists naming `what` for a unique violation, else the database error.
fn already_exists(err: sqlx::Error, what: impl FnOnce() -> String) -> StoreError {
    match err.as_database_error() {
        Some(db) if db.is_unique_violation() => StoreError::AlreadyExists(what()),
        _ => StoreError::Database(err),
    }
}

/// Stores the next version of the app in one transaction and returns its number.
pub(crate) async fn deploy(
    pool: &impl Transactional,
    d: &NewDeployment,
) -> Result<u32, StoreError> {
    let tx = pool.begin().await?;
    let (latest,): (i64,) = tx
        .fetch_one(
            Statement::new(
                "SELECT COALESCE(MAX(version), 0) FROM deployments \
                 WHERE workspace_id = $1 AND app_name = $2",
            )
            .bind(d.workspace_id.as_str())
            .bind(d.app_name.as_str()),
        )
        .await?;
    let version = latest + 1;
    let insert = Statement::new(
        "INSERT INTO deployments (workspace_id, app_name, version, deployed_by, created_at) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(d.workspace_id.as_str())
    .bind(d.app_name.as_str())
    .bind(version)
    .bind(d.deployed_by.as_str())
    .bind(at_rest(d.at));
    tx.execute(insert).await.map_err(|err| {
        already_exists(err, || {
            format!(
                "version {version} of app {:?} (a concurrent deploy took it; deploy again)",
                d.app_name
            )
        })
    })?;
    for (function_name, stub_id) in &d.functions {
        let insert = Statement::new(
            "INSERT INTO deployment_functions \
             (workspace_id, app_name, version, function_name, stub_id) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(d.workspace_id.as_str())
        .bind(d.app_name.as_str())
        .bind(version)
        .bind(function_name.as_str())
        .bind(stub_id.as_str());
        tx.execute(insert).await.map_err(|err| {
            already_exists(err, || {
                format!("function {function_name:?} twice in app {:?}", d.app_name)
            })
        })?;
    }
    super::schedules::replace(
        &tx,
        &d.workspace_id,
        &d.app_name,
        version,
        &d.functions,
        &d.schedules,
        d.at,
    )
    .await?;
    super::endpoints::replace(
        &tx,
        &d.workspace_id,
        &d.app_name,
        version,
        &d.functions,
        &d.endpoints,
    )
    .await?;
    pool.commit(tx).await?;
    u32::try_from(version)
        .map_err(|_| StoreError::Corrupt(format!("app {:?}: version {version}", d.app_name)))
}

/// The functions of the current version of every app of the workspace, by app
/// then function name.
pub(crate) async fn list(
    pool: &impl Backend,
    workspace_id: &str,
) -> Result<Vec<DeploymentRecord>, StoreError> {
    let select = Statement::new(concat!(
        current_functions!(ROW),
        "d.workspace_id = $1 ORDER BY d.app_name, f.function_name"
    ))
    .bind(workspace_id);
    let rows: Vec<DeploymentRow> = pool.fetch_all(select).await?;
    rows.into_iter().map(DeploymentRow::into_record).collect()
}

/// One function of the current version of an app of the workspace.
pub(crate) async fn get(
    pool: &impl Backend,
    workspace_id: &str,
    app_name: &str,
    function_name: &str,
) -> Result<Option<DeploymentRecord>, StoreError> {
    let select = Statement::new(concat!(
        current_functions!(ROW),
        "d.workspace_id = $1 AND d.app_name = $2 AND f.function_name = $3"
    ))
    .bind(workspace_id)
    .bind(app_name)
    .bind(function_name);
    let row: Option<DeploymentRow> = pool.fetch_optional(select).await?;
    row.map(DeploymentRow::into_record).transpose()
}

/// The stubs of the current version of every app of every workspace, each
/// once, as (workspace id, stub id).
pub(crate) async fn deployed_stubs(
    pool: &impl Backend,
) -> Result<Vec<(String, String)>, StoreError> {
    let select = Statement::new(concat!(
        current_functions!("DISTINCT d.workspace_id, f.stub_id"),
        "1 = 1 ORDER BY d.workspace_id, f.stub_id"
    ));
    Ok(pool.fetch_all(select).await?)
}
