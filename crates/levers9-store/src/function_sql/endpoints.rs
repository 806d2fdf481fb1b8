//! Web endpoints of deployed apps (see `migrations/*/0009_endpoints.sql`
//! and, for every version's, `0012_endpoint_versions.sql`).

use sqlx::FromRow;

use crate::backend::{Backend, Statement};
use crate::endpoint_model::{EndpointKind, EndpointRecord, NewEndpoint};
use crate::error::StoreError;

#[derive(FromRow)]
pub(crate) struct EndpointRow {
    workspace_id: String,
    name: String,
    app_name: String,
    function_name: String,
    stub_id: String,
    public: bool,
    kind: String,
    version: i64,
}

impl EndpointRow {
    fn into_record(self) -> Result<EndpointRecord, StoreError> {
        let version = u32::try_from(self.version).map_err(|_| {
            StoreError::Corrupt(format!(
                "endpoint {:?}: version {}",
                self.name, self.version
            ))
        })?;
        let kind = EndpointKind::parse(&self.kind).ok_or_else(|| {
            StoreError::Corrupt(format!("endpoint {:?}: kind {:?}", self.name, self.kind))
        })?;
        Ok(EndpointRecord {
            workspace_id: self.workspace_id,
            name: self.name,
            app_name: self.app_name,
            function_name: self.function_name,
            stub_id: self.stub_id,
            public: self.public,
            kind,
            version,
        })
    }
}

/// Replaces the app's endpoints by those of its new `version`, inside the
/// deploy's transaction (`tx`). AlreadyExists when another app of the
/// workspace serves one of the names.
pub(crate) async fn replace(
    tx: &impl Backend,
    workspace_id: &str,
    app_name: &str,
    version: i64,
    functions: &[(String, String)],
    endpoints: &[NewEndpoint],
) -> Result<(), StoreError> {
    // First, so a name the app keeps is free for its new row.
    tx.execute(
        Statement::new("DELETE FROM endpoints WHERE workspace_id = $1 AND app_name = $2")
            .bind(workspace_id)
            .bind(app_name),
    )
    .await?;
    for e in endpoints {
        let Some((_, stub_id)) = functions.iter().find(|(f, _)| *f == e.function_name) else {
            return Err(StoreError::Invalid(format!(
                "an endpoint for {:?}, which is not a function of app {app_name:?}",
                e.function_name
            )));
        };
        let insert = Statement::new(
            "INSERT INTO endpoints \
             (workspace_id, name, app_name, function_name, stub_id, public, kind, version) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(workspace_id)
        .bind(e.name.as_str())
        .bind(app_name)
        .bind(e.function_name.as_str())
        .bind(stub_id.as_str())
        .bind(e.public)
        .bind(e.kind.as_str())
        .bind(version);
        tx.execute(insert)
            .await
            .map_err(|err| match err.as_database_error() {
                Some(db) if db.is_unique_violation() => StoreError::AlreadyExists(format!(
                    "endpoint name {:?} (another app of the workspace serves it; pick another \
                     name, or remove it from that app and deploy it first)",
                    e.name
                )),
                _ => StoreError::Database(err),
            })?;
        // The version's own row, kept after later deploys for pinned paths.
        let insert = Statement::new(
            "INSERT INTO endpoint_versions \
             (workspace_id, app_name, version, name, function_name, stub_id, public, kind) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(workspace_id)
        .bind(app_name)
        .bind(version)
        .bind(e.name.as_str())
        .bind(e.function_name.as_str())
        .bind(stub_id.as_str())
        .bind(e.public)
        .bind(e.kind.as_str());
        tx.execute(insert).await?;
    }
    Ok(())
}

/// The endpoint `name` as `version` of the workspace's app `app_name` set it.
pub(crate) async fn find_version(
    pool: &impl Backend,
    workspace_id: &str,
    app_name: &str,
    name: &str,
    version: u32,
) -> Result<Option<EndpointRecord>, StoreError> {
    let select = Statement::new(
        "SELECT workspace_id, name, app_name, function_name, stub_id, public, kind, version \
         FROM endpoint_versions \
         WHERE workspace_id = $1 AND app_name = $2 AND name = $3 AND version = $4",
    )
    .bind(workspace_id)
    .bind(app_name)
    .bind(name)
    .bind(i64::from(version));
    let row: Option<EndpointRow> = pool.fetch_optional(select).await?;
    row.map(EndpointRow::into_record).transpose()
}

/// The versions of the workspace's app `app_name` that served the endpoint
/// `name`, ascending.
pub(crate) async fn versions(
    pool: &impl Backend,
    workspace_id: &str,
    app_name: &str,
    name: &str,
) -> Result<Vec<u32>, StoreError> {
    let select = Statement::new(
        "SELECT version FROM endpoint_versions \
         WHERE workspace_id = $1 AND app_name = $2 AND name = $3 ORDER BY version",
    )
    .bind(workspace_id)
    .bind(app_name)
    .bind(name);
    let rows: Vec<(i64,)> = pool.fetch_all(select).await?;
    rows.into_iter()
        .map(|(version,)| {
            u32::try_from(version)
                .map_err(|_| StoreError::Corrupt(format!("endpoint {name:?}: version {version}")))
        })
        .collect()
}

/// The endpoint `name` of the workspace named `workspace_name`.
pub(crate) async fn find(
    pool: &impl Backend,
    workspace_name: &str,
    name: &str,
) -> Result<Option<EndpointRecord>, StoreError> {
    let select = Statement::new(
        "SELECT e.workspace_id, e.name, e.app_name, e.function_name, e.stub_id, e.public, \
         e.kind, e.version FROM endpoints e JOIN workspaces w ON w.id = e.workspace_id \
         WHERE w.name = $1 AND e.name = $2",
    )
    .bind(workspace_name)
    .bind(name);
    let row: Option<EndpointRow> = pool.fetch_optional(select).await?;
    row.map(EndpointRow::into_record).transpose()
}
