//! AuthService: who a token belongs to, and the first token of a fresh install.

use std::sync::Arc;

use levers9_api::v1::{auth_service_server::AuthService, AuthorizeRequest, AuthorizeResponse};
use levers9_api::BOOTSTRAP_SECRET_METADATA;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};

use crate::auth::{self, bearer_token};
use crate::error::ApiError;
use crate::Shared;

/// Name of the workspace bootstrap creates.
const FIRST_WORKSPACE_NAME: &str = "default";

/// The AuthService implementation.
pub struct AuthApi {
    shared: Arc<Shared>,
}

impl AuthApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// Hands out the first admin token.
    ///
    /// # Guarantees
    /// - Without a configured secret nothing is created and the answer is
    ///   "Bootstrap is off on this controlplane".
    /// - A missing or wrong secret is refused with one message whatever the
    ///   install holds, compared in constant time.
    /// - However many callers race on an empty install, one workspace is made
    ///   and one caller gets its token (the store's claim row decides).
    /// - Once a workspace exists the secret does nothing.
    async fn bootstrap(&self, metadata: &MetadataMap) -> Result<AuthorizeResponse, ApiError> {
        let configured = &self.shared.bootstrap_secret;
        if configured.is_empty() {
            return Err(ApiError::FailedPrecondition(
                "Bootstrap is off on this controlplane: no bootstrap secret is configured. \
                 Ask your admin for a token (levers9 token create), or start the controlplane \
                 with LEVERS9_BOOTSTRAP_SECRET set to get the first admin token of a new install"
                    .into(),
            ));
        }
        let offered = metadata
            .get(BOOTSTRAP_SECRET_METADATA)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !secrets_match(offered, configured.expose()) {
            return Err(ApiError::PermissionDenied(
                "the bootstrap secret is missing or wrong: send the value the controlplane was \
                 started with (LEVERS9_BOOTSTRAP_SECRET) as x-levers9-bootstrap-secret, or use a \
                 token"
                    .into(),
            ));
        }
        let (workspace, record, minted) =
            super::new_workspace_with_admin(FIRST_WORKSPACE_NAME, "first admin token (bootstrap)");
        let Some(workspace) = self
            .shared
            .store
            .bootstrap_first_workspace(workspace, record)
            .await?
        else {
            return Err(ApiError::FailedPrecondition(
                "this controlplane already has a workspace, so bootstrap is done and the secret \
                 does nothing: ask an admin for a token (levers9 token create)"
                    .into(),
            ));
        };
        tracing::info!(workspace_id = %workspace.id, "bootstrap created the first workspace and its admin token");
        Ok(AuthorizeResponse {
            workspace_id: workspace.id,
            workspace_name: workspace.name,
            token_type: levers9_store::TokenType::Admin.to_string(),
            new_token: minted.secret,
        })
    }
}

/// Compares hashes so neither the length nor the content of the secret leaks
/// through timing.
fn secrets_match(offered: &str, configured: &str) -> bool {
    let a = Sha256::digest(offered.as_bytes());
    let b = Sha256::digest(configured.as_bytes());
    !offered.is_empty() && bool::from(a.ct_eq(&b))
}

#[tonic::async_trait]
impl AuthService for AuthApi {
    async fn authorize(
        &self,
        request: Request<AuthorizeRequest>,
    ) -> Result<Response<AuthorizeResponse>, Status> {
        let metadata = request.metadata();
        if bearer_token(metadata.as_ref())?.is_none() {
            return Ok(Response::new(self.bootstrap(metadata).await?));
        }
        let caller = auth::caller(&request)?;
        Ok(Response::new(AuthorizeResponse {
            workspace_id: caller.workspace.id,
            workspace_name: caller.workspace.name,
            token_type: caller.token_type.to_string(),
            new_token: String::new(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::secrets_match;

    #[test]
    fn secrets_match_only_when_equal_and_not_empty() {
        assert!(secrets_match("s3cret", "s3cret"));
        assert!(!secrets_match("s3cret", "s3cre"));
        assert!(!secrets_match("", ""));
    }
}
