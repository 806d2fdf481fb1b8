//! TokenService: tokens of the caller's workspace.

use std::sync::Arc;

use levers9_api::v1::{
    token_service_server::TokenService, CreateTokenRequest, CreateTokenResponse, ListTokensRequest,
    ListTokensResponse, RevokeTokenRequest, RevokeTokenResponse,
};
use levers9_store::{NewToken, TokenType};
use tonic::{Request, Response, Status};

use super::convert;
use crate::auth::token;
use crate::auth::{authorized, USERS};
use crate::error::ApiError;
use crate::Shared;

const MAX_DESCRIPTION: usize = 200;

/// The TokenService implementation.
pub struct TokenApi {
    shared: Arc<Shared>,
}

impl TokenApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

/// Which token types a caller may create and revoke: admins any, workspace
/// tokens only their own kind, so a workspace token can never mint an admin.
fn may_manage(caller: TokenType, target: TokenType) -> bool {
    match caller {
        TokenType::Admin => true,
        TokenType::Workspace => target == TokenType::Workspace,
        TokenType::Worker | TokenType::Machine => false,
    }
}

fn parse_type(text: &str) -> Result<TokenType, ApiError> {
    if text.is_empty() {
        return Ok(TokenType::Workspace);
    }
    text.parse().map_err(|_| {
        ApiError::InvalidArgument(format!(
            "unknown token type {text:?}: use admin, workspace, worker or machine"
        ))
    })
}

#[tonic::async_trait]
impl TokenService for TokenApi {
    async fn create_token(
        &self,
        request: Request<CreateTokenRequest>,
    ) -> Result<Response<CreateTokenResponse>, Status> {
        let caller = authorized(&request, USERS, "create tokens")?;
        let body = request.into_inner();
        let token_type = parse_type(&body.token_type)?;
        if !may_manage(caller.token_type, token_type) {
            return Err(ApiError::PermissionDenied(format!(
                "a {} token cannot create {token_type} tokens: use an admin token",
                caller.token_type
            ))
            .into());
        }
        if body.description.chars().count() > MAX_DESCRIPTION {
            return Err(ApiError::InvalidArgument(format!(
                "the description is longer than {MAX_DESCRIPTION} characters"
            ))
            .into());
        }
        let minted = token::mint();
        let record = self
            .shared
            .store
            .insert_token(NewToken {
                id: crate::new_id(),
                workspace_id: caller.workspace.id.clone(),
                token_type,
                description: body.description,
                hash: minted.hash,
                created_at: chrono::Utc::now(),
            })
            .await
            .map_err(ApiError::from)?;
        tracing::info!(workspace_id = %caller.workspace.id, token_id = %record.id, %token_type, "token created");
        Ok(Response::new(CreateTokenResponse {
            token: Some(convert::token(record)),
            secret: minted.secret,
        }))
    }

    async fn list_tokens(
        &self,
        request: Request<ListTokensRequest>,
    ) -> Result<Response<ListTokensResponse>, Status> {
        let caller = authorized(&request, USERS, "list tokens")?;
        let records = self
            .shared
            .store
            .list_tokens(&caller.workspace.id)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(ListTokensResponse {
            tokens: records.into_iter().map(convert::token).collect(),
        }))
    }

    async fn revoke_token(
        &self,
        request: Request<RevokeTokenRequest>,
    ) -> Result<Response<RevokeTokenResponse>, Status> {
        let caller = authorized(&request, USERS, "revoke tokens")?;
        let token_id = request.into_inner().token_id;
        if token_id.is_empty() {
            return Err(ApiError::InvalidArgument(
                "token_id is empty: pass the id shown by levers9 token list".into(),
            )
            .into());
        }
        let not_found = || {
            ApiError::NotFound(format!(
                "no token {token_id:?} in this workspace: see levers9 token list"
            ))
        };
        // Check the type before revoking so a workspace token cannot revoke an
        // admin token; ids of other workspaces look exactly like missing ones.
        let records = self
            .shared
            .store
            .list_tokens(&caller.workspace.id)
            .await
            .map_err(ApiError::from)?;
        let target = records
            .iter()
            .find(|t| t.id == token_id)
            .ok_or_else(not_found)?;
        if !may_manage(caller.token_type, target.token_type) {
            return Err(ApiError::PermissionDenied(format!(
                "a {} token cannot revoke {} tokens: use an admin token",
                caller.token_type, target.token_type
            ))
            .into());
        }
        let record = self
            .shared
            .store
            .revoke_token(&caller.workspace.id, &token_id, chrono::Utc::now())
            .await
            .map_err(ApiError::from)?
            .ok_or_else(not_found)?;
        self.shared.auth.forget(&record.id);
        tracing::info!(workspace_id = %caller.workspace.id, token_id = %record.id, "token revoked");
        Ok(Response::new(RevokeTokenResponse {
            token: Some(convert::token(record)),
        }))
    }
}
