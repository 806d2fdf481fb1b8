//! Stubs, for FunctionService: a function's code, SDK, entry point and
//! config checked and stored once per content.

use levers9_api::v1::{GetOrCreateStubRequest, GetOrCreateStubResponse};
use levers9_store::StubRecord;

use super::container::{check_secrets, qualify_image};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::functions::objects::digest_hex;
use crate::functions::spec::{stub_id, StubSpec};
use crate::Shared;

/// The stub of `body` in the caller's workspace, made if new: its objects
/// must be uploaded, its module path inside the code, its image known, its
/// pool and secrets real.
pub(super) async fn get_or_create(
    shared: &Shared,
    caller: &Caller,
    body: GetOrCreateStubRequest,
) -> Result<GetOrCreateStubResponse, ApiError> {
    let workspace_id = &caller.workspace.id;
    if body.function_name.is_empty() || body.module_path.is_empty() {
        return Err(ApiError::InvalidArgument(
            "a stub needs module_path and function_name: where the function is defined".into(),
        ));
    }
    if body.module_path.starts_with('/') || body.module_path.split('/').any(|p| p == "..") {
        return Err(ApiError::InvalidArgument(format!(
            "module_path {:?} must be a path inside the code object",
            body.module_path
        )));
    }
    for (what, digest) in [("code", &body.code_digest), ("sdk", &body.sdk_digest)] {
        digest_hex(digest)?;
        if !shared
            .functions
            .has_object(workspace_id, digest)
            .await
            .map_err(ApiError::from)?
        {
            return Err(ApiError::FailedPrecondition(format!(
                "the {what} object {digest} is not uploaded: PutObject it first"
            )));
        }
    }
    let config = body.config.unwrap_or_default();
    let image = if config.image.trim().is_empty() {
        shared.base_image.clone().ok_or_else(|| {
            ApiError::InvalidArgument(
                "no image given and no Python base image configured: set \
                 imageService.runner.baseImageRegistry (levers9 up does) or pass \
                 image=Image.from_registry(\"registry/name@sha256:…\")"
                    .into(),
            )
        })?
    } else {
        qualify_image(config.image.trim(), &shared.image_registry)?
    };
    let spec = StubSpec::from_config(config, image)?;
    shared.fleet.require_pool(&spec.pool).await?;
    check_secrets(shared, workspace_id, &spec.secrets, &spec.env).await?;
    let config_json = spec.to_json();
    let id = stub_id(
        workspace_id,
        &[
            &body.name,
            &body.code_digest,
            &body.sdk_digest,
            &body.module_path,
            &body.function_name,
            &config_json,
        ],
    );
    let stub = shared
        .functions
        .get_or_create_stub(StubRecord {
            id,
            workspace_id: workspace_id.clone(),
            name: body.name,
            code_digest: body.code_digest,
            sdk_digest: body.sdk_digest,
            module_path: body.module_path,
            function_name: body.function_name,
            config_json,
            created_at: chrono::Utc::now(),
        })
        .await
        .map_err(ApiError::from)?;
    Ok(GetOrCreateStubResponse { stub_id: stub.id })
}

/// The stub `stub_id` of the caller's workspace; another workspace's looks
/// like a missing one. Read through the replica's stub cache.
pub(super) async fn owned(
    shared: &Shared,
    caller: &Caller,
    stub_id: &str,
) -> Result<StubRecord, ApiError> {
    let workspace_id = &caller.workspace.id;
    if let Some(stub) = shared.stubs.get(workspace_id, stub_id) {
        return Ok(stub);
    }
    let stub = shared
        .functions
        .get_stub(workspace_id, stub_id)
        .await?
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "no stub {stub_id:?} in this workspace: create it with GetOrCreateStub"
            ))
        })?;
    shared.stubs.put(&stub);
    Ok(stub)
}
