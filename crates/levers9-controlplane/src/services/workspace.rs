//! WorkspaceService.

use std::sync::Arc;

use levers9_api::v1::{
    workspace_service_server::WorkspaceService, CreateWorkspaceRequest, CreateWorkspaceResponse,
    GetStorageCredentialsRequest, GetStorageCredentialsResponse, GetWorkspaceRequest,
    GetWorkspaceResponse, SetStorageCredentialsRequest, SetStorageCredentialsResponse,
    StorageCredentials,
};
use tonic::{Request, Response, Status};
use zeroize::{Zeroize, Zeroizing};

use super::convert;
use crate::auth::{self as auth, authorized, ADMINS};
use crate::error::ApiError;
use crate::sealing;
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

fn validate_storage(c: &StorageCredentials) -> Result<(), ApiError> {
    let missing = [
        ("endpoint", c.endpoint.is_empty()),
        ("bucket", c.bucket.is_empty()),
        ("access_key_id", c.access_key_id.is_empty()),
        ("secret_access_key", c.secret_access_key.is_empty()),
    ];
    if let Some((field, _)) = missing.iter().find(|(_, empty)| *empty) {
        return Err(ApiError::InvalidArgument(format!(
            "storage credentials need {field}"
        )));
    }
    if !(c.endpoint.starts_with("https://") || c.endpoint.starts_with("http://")) {
        return Err(ApiError::InvalidArgument(format!(
            "the storage endpoint {:?} must start with https:// (or http:// for a local server)",
            c.endpoint
        )));
    }
    Ok(())
}

#[tonic::async_trait]
impl WorkspaceService for WorkspaceApi {
    async fn create_workspace(
        &self,
        request: Request<CreateWorkspaceRequest>,
    ) -> Result<Response<CreateWorkspaceResponse>, Status> {
        let caller = authorized(&request, ADMINS, "create workspaces")?;
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
        let caller = auth::caller(&request)?;
        Ok(Response::new(GetWorkspaceResponse {
            workspace: Some(convert::workspace(caller.workspace)),
        }))
    }

    async fn set_storage_credentials(
        &self,
        request: Request<SetStorageCredentialsRequest>,
    ) -> Result<Response<SetStorageCredentialsResponse>, Status> {
        let caller = authorized(&request, ADMINS, "set storage credentials")?;
        let credentials = request.into_inner().credentials.unwrap_or_default();
        validate_storage(&credentials)?;
        let id = sealing::storage_id(&caller.workspace.id);
        // Serialising the generated message cannot fail: it is plain strings.
        let plaintext = Zeroizing::new(
            serde_json::to_vec(&credentials)
                .map_err(|e| ApiError::InvalidArgument(format!("unreadable credentials: {e}")))?,
        );
        let value = sealing::sealed_value(&self.shared.keyring, id, &plaintext, chrono::Utc::now());
        self.shared
            .sealed
            .put_sealed(value)
            .await
            .map_err(ApiError::from)?;
        tracing::info!(workspace_id = %caller.workspace.id, endpoint = %credentials.endpoint, bucket = %credentials.bucket, "storage credentials set");
        Ok(Response::new(SetStorageCredentialsResponse {}))
    }

    async fn get_storage_credentials(
        &self,
        request: Request<GetStorageCredentialsRequest>,
    ) -> Result<Response<GetStorageCredentialsResponse>, Status> {
        let caller = authorized(&request, ADMINS, "read storage credentials")?;
        let (mut credentials, key_id) = sealing::open_storage(
            self.shared.sealed.as_ref(),
            &self.shared.keyring,
            &caller.workspace.id,
        )
        .await?
        .ok_or_else(|| {
            ApiError::NotFound(
                "this workspace has no storage credentials: set them with \
                 levers9 workspace storage set"
                    .into(),
            )
        })?;
        credentials.secret_access_key.zeroize();
        Ok(Response::new(GetStorageCredentialsResponse {
            credentials: Some(credentials),
            key_id,
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
