//! Deployed apps, for FunctionService: an app's functions under a name, so a
//! caller without the code calls them by (app, function).

use std::collections::HashSet;

use chrono::Utc;
use levers9_api::v1::{
    DeployRequest, DeployResponse, GetDeploymentRequest, GetDeploymentResponse,
    ListDeploymentsRequest, ListDeploymentsResponse,
};
use levers9_store::NewDeployment;

use super::convert;
use super::{schedule, stub};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::Shared;

const MAX_APP_NAME: usize = 64;

fn check_app_name(name: &str) -> Result<(), ApiError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || name.len() > MAX_APP_NAME || !name.chars().all(allowed) {
        return Err(ApiError::InvalidArgument(format!(
            "app name {name:?} is not valid: use 1 to {MAX_APP_NAME} letters, digits, '-', '_' or '.'"
        )));
    }
    Ok(())
}

pub(super) async fn deploy(
    shared: &Shared,
    caller: &Caller,
    request: DeployRequest,
) -> Result<DeployResponse, ApiError> {
    check_app_name(&request.app_name)?;
    if request.functions.is_empty() {
        return Err(ApiError::InvalidArgument(format!(
            "app {:?} has no functions: deploy a module with at least one @function",
            request.app_name
        )));
    }
    let mut names = HashSet::new();
    for f in &request.functions {
        if f.function_name.is_empty() || !names.insert(f.function_name.as_str()) {
            return Err(ApiError::InvalidArgument(format!(
                "function name {:?} is empty or given twice in app {:?}",
                f.function_name, request.app_name
            )));
        }
        // NotFound for a stub of another workspace, as for any call.
        stub::owned(shared, caller, &f.stub_id).await?;
    }
    let now = Utc::now();
    let schedules = schedule::of_deploy(
        &caller.workspace.id,
        &request.app_name,
        &request.functions,
        now,
    )?;
    let endpoints = crate::endpoints::of_deploy(&request.functions)?;
    let version = shared
        .functions
        .deploy(NewDeployment {
            workspace_id: caller.workspace.id.clone(),
            app_name: request.app_name.clone(),
            functions: request
                .functions
                .into_iter()
                .map(|f| (f.function_name, f.stub_id))
                .collect(),
            schedules,
            endpoints,
            deployed_by: caller.token_id.clone(),
            at: now,
        })
        .await?;
    tracing::info!(
        workspace = %caller.workspace.id,
        app = %request.app_name,
        version,
        "app deployed"
    );
    Ok(DeployResponse { version })
}

pub(super) async fn list(
    shared: &Shared,
    caller: &Caller,
    _request: ListDeploymentsRequest,
) -> Result<ListDeploymentsResponse, ApiError> {
    let deployments = shared
        .functions
        .list_deployments(&caller.workspace.id)
        .await?;
    Ok(ListDeploymentsResponse {
        deployments: deployments.iter().map(convert::deployment).collect(),
    })
}

pub(super) async fn get(
    shared: &Shared,
    caller: &Caller,
    request: GetDeploymentRequest,
) -> Result<GetDeploymentResponse, ApiError> {
    let deployment = shared
        .functions
        .get_deployment(
            &caller.workspace.id,
            &request.app_name,
            &request.function_name,
        )
        .await?
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "no function {:?} in a deployed app {:?} of this workspace: deploy it with \
                 levers9 deploy, see levers9 deployment list",
                request.function_name, request.app_name
            ))
        })?;
    Ok(GetDeploymentResponse {
        deployment: Some(convert::deployment(&deployment)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_names_are_short_and_plain() {
        assert!(check_app_name("my-app_1.v2").is_ok());
        for bad in ["", "a/b", "with space", &"x".repeat(65)] {
            let err = check_app_name(bad).unwrap_err().to_string();
            assert!(err.contains("is not valid"), "{err}");
        }
    }
}
