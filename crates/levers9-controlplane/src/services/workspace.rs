//! WorkspaceService.

use std::sync::Arc;

use levers9_api::v1::{
    workspace_service_server::WorkspaceService, CreateWorkspaceRequest, CreateWorkspaceResponse,
    GetWorkspaceRequest, GetWorkspaceResponse,
};
use levers9_store::TokenType;
use tonic::{Request, Response, Status};

use super::convert;
use crate::error::ApiError;
use crate::Shared;

/// The WorkspaceService implementation.
pub struct WorkspaceApi {
    shared: Arc<Shared>,
}

impl WorkspaceApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

/// Workspace names end up in URLs, bucket prefixes and Kubernetes labels, so
/// they follow the strictest of those: DNS-label rules.
fn validate_name(name: &str) -> Result<(), ApiError> {
    let ok = (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        return Ok(());
    }
    Err(ApiError::InvalidArgument(format!(
        "invalid workspace name {name:?}: use 1 to 63 lower-case letters, digits and dashes, \
         not starting or ending with a dash"
    )))
}

#[tonic::async_trait]
impl WorkspaceService for WorkspaceApi {
    async fn create_workspace(
        &self,
        request: Request<CreateWorkspaceRequest>,
    ) -> Result<Response<CreateWorkspaceResponse>, Status> {
        let caller = self.shared.auth.authenticate(request.metadata()).await?;
        caller.require(&[TokenType::Admin], "create workspaces")?;
        let name = request.into_inner().name;
        validate_name(&name)?;
        let (workspace, record, minted) =
            super::new_workspace_with_admin(&name, "first admin token of the workspace");
        let workspace = self
            .shared
            .store
            .create_workspace(workspace, record)
            .await
            .map_err(ApiError::from)?;
        tracing::info!(workspace_id = %workspace.id, by_workspace = %caller.workspace.id, "workspace created");
        Ok(Response::new(CreateWorkspaceResponse {
            workspace: Some(convert::workspace(workspace)),
            admin_token: minted.secret,
        }))
    }

    async fn get_workspace(
        &self,
        request: Request<GetWorkspaceRequest>,
    ) -> Result<Response<GetWorkspaceResponse>, Status> {
        let caller = self.shared.auth.authenticate(request.metadata()).await?;
        Ok(Response::new(GetWorkspaceResponse {
            workspace: Some(convert::workspace(caller.workspace)),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::validate_name;

    #[test]
    fn workspace_names_follow_dns_label_rules() {
        assert!(validate_name("team-a1").is_ok());
        for bad in ["", "Team", "-a", "a-", "a_b", &"x".repeat(64)] {
            assert!(validate_name(bad).is_err(), "{bad:?} accepted");
        }
    }
}
