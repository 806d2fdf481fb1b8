//! SecretService: the secrets of the caller's workspace. Values go in sealed
//! and never come back out through the API.

use std::sync::Arc;

use levers9_api::v1::{
    secret_service_server::SecretService, CreateSecretRequest, CreateSecretResponse,
    DeleteSecretRequest, DeleteSecretResponse, ListSecretsRequest, ListSecretsResponse,
    UpdateSecretRequest, UpdateSecretResponse,
};
use levers9_store::{SealedId, SealedKind, TokenType};
use tonic::{Request, Response, Status};

use super::convert;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::sealing;
use crate::Shared;

const MANAGERS: &[TokenType] = &[TokenType::Admin, TokenType::Workspace];
/// Environment variables are not meant for bulk data; a value this large is
/// almost certainly a file that belongs in a volume.
const MAX_VALUE_BYTES: usize = 64 * 1024;
const MAX_NAME_LEN: usize = 128;
/// Names the platform itself sets in containers.
const RESERVED_PREFIX: &str = "LEVERS9_";

/// The SecretService implementation.
pub struct SecretApi {
    shared: Arc<Shared>,
}

impl SecretApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    async fn caller(&self, metadata: &tonic::metadata::MetadataMap) -> Result<Caller, ApiError> {
        let caller = self.shared.auth.authenticate(metadata).await?;
        caller.require(MANAGERS, "manage secrets")?;
        Ok(caller)
    }
}

/// Secret names become environment variable names in containers.
fn validate_name(name: &str) -> Result<(), ApiError> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(ApiError::InvalidArgument(format!(
            "invalid secret name {name:?}: it becomes an environment variable, so use up to \
             {MAX_NAME_LEN} letters, digits and underscores, not starting with a digit"
        )));
    }
    if name.starts_with(RESERVED_PREFIX) {
        return Err(ApiError::InvalidArgument(format!(
            "secret names starting with {RESERVED_PREFIX} are reserved for levers9's own settings"
        )));
    }
    Ok(())
}

fn validate_value(value: &str) -> Result<(), ApiError> {
    if value.is_empty() {
        return Err(ApiError::InvalidArgument(
            "the secret value is empty: pass --value, --from-file or pipe it on stdin".into(),
        ));
    }
    if value.len() > MAX_VALUE_BYTES {
        return Err(ApiError::InvalidArgument(format!(
            "the secret value is {} bytes, over the {MAX_VALUE_BYTES}-byte limit: put large \
             files in a volume",
            value.len()
        )));
    }
    Ok(())
}

fn secret_id(caller: &Caller, name: &str) -> SealedId {
    SealedId {
        kind: SealedKind::Secret,
        workspace_id: caller.workspace.id.clone(),
        name: name.to_owned(),
    }
}

fn not_found(name: &str) -> ApiError {
    ApiError::NotFound(format!(
        "no secret {name:?} in this workspace: see levers9 secret list"
    ))
}

#[tonic::async_trait]
impl SecretService for SecretApi {
    async fn create_secret(
        &self,
        request: Request<CreateSecretRequest>,
    ) -> Result<Response<CreateSecretResponse>, Status> {
        let caller = self.caller(request.metadata()).await?;
        let body = request.into_inner();
        validate_name(&body.name)?;
        validate_value(&body.value)?;
        let now = chrono::Utc::now();
        let value = sealing::sealed_value(
            &self.shared.keyring,
            secret_id(&caller, &body.name),
            body.value.as_bytes(),
            now,
        );
        self.shared
            .sealed
            .insert_sealed(value.clone())
            .await
            .map_err(ApiError::from)?;
        tracing::info!(workspace_id = %caller.workspace.id, name = %body.name, "secret created");
        Ok(Response::new(CreateSecretResponse {
            secret: Some(convert::secret(&value.id.name, &value.key_id, now, now)),
        }))
    }

    async fn update_secret(
        &self,
        request: Request<UpdateSecretRequest>,
    ) -> Result<Response<UpdateSecretResponse>, Status> {
        let caller = self.caller(request.metadata()).await?;
        let body = request.into_inner();
        validate_name(&body.name)?;
        validate_value(&body.value)?;
        let value = sealing::sealed_value(
            &self.shared.keyring,
            secret_id(&caller, &body.name),
            body.value.as_bytes(),
            chrono::Utc::now(),
        );
        let info = self
            .shared
            .sealed
            .update_sealed(&value.id, &value.key_id, &value.sealed, value.updated_at)
            .await
            .map_err(ApiError::from)?
            .ok_or_else(|| not_found(&body.name))?;
        tracing::info!(workspace_id = %caller.workspace.id, name = %body.name, "secret updated");
        Ok(Response::new(UpdateSecretResponse {
            secret: Some(convert::secret(
                &info.id.name,
                &info.key_id,
                info.created_at,
                info.updated_at,
            )),
        }))
    }

    async fn list_secrets(
        &self,
        request: Request<ListSecretsRequest>,
    ) -> Result<Response<ListSecretsResponse>, Status> {
        let caller = self.caller(request.metadata()).await?;
        let infos = self
            .shared
            .sealed
            .list_sealed(SealedKind::Secret, &caller.workspace.id)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(ListSecretsResponse {
            secrets: infos
                .iter()
                .map(|i| convert::secret(&i.id.name, &i.key_id, i.created_at, i.updated_at))
                .collect(),
        }))
    }

    async fn delete_secret(
        &self,
        request: Request<DeleteSecretRequest>,
    ) -> Result<Response<DeleteSecretResponse>, Status> {
        let caller = self.caller(request.metadata()).await?;
        let name = request.into_inner().name;
        let id = secret_id(&caller, &name);
        if !self
            .shared
            .sealed
            .delete_sealed(&id)
            .await
            .map_err(ApiError::from)?
        {
            return Err(not_found(&name).into());
        }
        tracing::info!(workspace_id = %caller.workspace.id, %name, "secret deleted");
        Ok(Response::new(DeleteSecretResponse {}))
    }
}

#[cfg(test)]
mod tests {
    use super::{validate_name, validate_value};

    #[test]
    fn secret_names_are_environment_variable_names() {
        assert!(validate_name("DB_PASSWORD").is_ok());
        assert!(validate_name("_x1").is_ok());
        for bad in ["", "1ABC", "A-B", "A B", "LEVERS9_SECURITY_PROFILE"] {
            assert!(validate_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(validate_value("").is_err());
        assert!(validate_value(&"x".repeat(64 * 1024 + 1)).is_err());
    }
}
