//! SecretService: the secrets of the caller's workspace. Values go in sealed
//! and never come back out through the API.

use std::sync::Arc;

use levers9_api::v1::{
    secret_service_server::SecretService, CreateInlineSecretRequest, CreateInlineSecretResponse,
    CreateSecretRequest, CreateSecretResponse, DeleteSecretRequest, DeleteSecretResponse,
    ListSecretsRequest, ListSecretsResponse, UpdateSecretRequest, UpdateSecretResponse,
};
use levers9_store::{SealedId, SealedKind, StoreError};
use tonic::{Request, Response, Status};

use super::convert;
use crate::auth::{authorized, Caller, USERS};
use crate::error::ApiError;
use crate::sealing;
use crate::Shared;

/// Environment variables are not meant for bulk data; a value this large is
/// almost certainly a file that belongs in a volume.
const MAX_VALUE_BYTES: usize = 64 * 1024;
const MAX_NAME_LEN: usize = 128;
/// Variables of one inline secret: a function's environment, not a vault.
const MAX_INLINE_VALUES: usize = 100;
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
        let caller = authorized(&request, USERS, "manage secrets")?;
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
        let caller = authorized(&request, USERS, "manage secrets")?;
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
        let caller = authorized(&request, USERS, "manage secrets")?;
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
        let caller = authorized(&request, USERS, "manage secrets")?;
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

    async fn create_inline_secret(
        &self,
        request: Request<CreateInlineSecretRequest>,
    ) -> Result<Response<CreateInlineSecretResponse>, Status> {
        let caller = authorized(&request, USERS, "manage secrets")?;
        // By variable, so the names come back in a stable order.
        let values: std::collections::BTreeMap<String, String> =
            request.into_inner().values.into_iter().collect();
        if values.is_empty() || values.len() > MAX_INLINE_VALUES {
            return Err(ApiError::InvalidArgument(format!(
                "an inline secret has 1 to {MAX_INLINE_VALUES} variables; got {}",
                values.len()
            ))
            .into());
        }
        for (variable, value) in &values {
            validate_inline_variable(variable)?;
            // Messages name the variable, never the value.
            if value.is_empty() || value.len() > MAX_VALUE_BYTES {
                return Err(ApiError::InvalidArgument(format!(
                    "inline secret variable {variable} has a {}-byte value: give 1 to \
                     {MAX_VALUE_BYTES} bytes (put large files in a volume)",
                    value.len()
                ))
                .into());
            }
        }
        let workspace_id = &caller.workspace.id;
        let mut names = Vec::with_capacity(values.len());
        for (variable, value) in &values {
            let name =
                sealing::inline_secret_name(&self.shared.keyring, workspace_id, variable, value);
            let sealed = sealing::sealed_value(
                &self.shared.keyring,
                secret_id(&caller, &name),
                value.as_bytes(),
                chrono::Utc::now(),
            );
            match self.shared.sealed.insert_sealed(sealed).await {
                Ok(()) => {
                    tracing::info!(%workspace_id, %name, "inline secret created");
                }
                // The name is derived from the value: the row holds it already.
                Err(StoreError::AlreadyExists(_)) => {}
                Err(error) => return Err(ApiError::from(error).into()),
            }
            names.push(name);
        }
        Ok(Response::new(CreateInlineSecretResponse { names }))
    }
}

/// A variable of an inline secret: a secret name whose stored form,
/// `LEVERS9_INLINE_<digest>_<variable>`, still fits the name limit.
fn validate_inline_variable(variable: &str) -> Result<(), ApiError> {
    validate_name(variable)?;
    let stored = sealing::INLINE_PREFIX.len() + 25 + variable.len();
    if stored > MAX_NAME_LEN {
        return Err(ApiError::InvalidArgument(format!(
            "inline secret variable {variable:?} is too long: use at most {} characters",
            MAX_NAME_LEN + variable.len() - stored
        )));
    }
    Ok(())
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
