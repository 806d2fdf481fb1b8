//! The REST mapping of the gRPC API, grpc-gateway style: JSON bodies with
//! lowerCamelCase names, gRPC metadata arriving as `Grpc-Metadata-<Name>`
//! headers (and `Authorization` as itself), gRPC codes mapped to HTTP
//! statuses, errors as `{"code", "message", "details"}`.

use std::future::Future;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use levers9_api::http_status_of;
use levers9_api::v1::{
    auth_service_server::AuthService, container_service_server::ContainerService,
    secret_service_server::SecretService, token_service_server::TokenService,
    volume_service_server::VolumeService, worker_service_server::WorkerService,
    workspace_service_server::WorkspaceService, CordonWorkerRequest, DeleteSecretRequest,
    DeleteVolumeRequest, DrainWorkerRequest, GetContainerRequest, RevokeTokenRequest,
    StopContainerRequest, UncordonWorkerRequest, UpdateSecretRequest,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::Status;

use crate::auth::Authenticator;
use crate::error::ApiError;
use crate::services::Services;

const METADATA_HEADER_PREFIX: &str = "grpc-metadata-";

/// A handler that reads the JSON body (or none, for GET; or the one path
/// parameter, bound to the request field of its name as grpc-gateway binds
/// `{field}`) as the request of `service.method` and answers with its
/// response.
macro_rules! rpc {
    (path: $service:ident . $method:ident, $request:ident { $field:ident }) => {
        |State(s): State<Rest>, Path($field): Path<String>, headers: HeaderMap| async move {
            let body = $request { $field };
            call(&s.auth, &headers, body, |r| async move {
                s.services.$service.$method(r).await
            })
            .await
        }
    };
    (body: $service:ident . $method:ident) => {
        |State(s): State<Rest>, headers: HeaderMap, body: Bytes| async move {
            unary(&s.auth, &headers, &body, |r| async move {
                s.services.$service.$method(r).await
            })
            .await
        }
    };
    (empty: $service:ident . $method:ident) => {
        |State(s): State<Rest>, headers: HeaderMap| async move {
            unary(&s.auth, &headers, b"", |r| async move {
                s.services.$service.$method(r).await
            })
            .await
        }
    };
}

/// What the REST handlers share: the services they map, and the token check
/// the gRPC server runs in its [`crate::auth::AuthLayer`].
#[derive(Clone)]
struct Rest {
    services: Services,
    auth: Arc<Authenticator>,
}

/// Routes under `/api/v1/controlplane`.
pub fn router(services: Services, auth: Arc<Authenticator>) -> Router {
    Router::new()
        .route(
            "/api/v1/controlplane/auth/authorize",
            post(rpc!(body: auth.authorize)),
        )
        .route(
            "/api/v1/controlplane/tokens",
            post(rpc!(body: token.create_token)).get(rpc!(empty: token.list_tokens)),
        )
        .route(
            "/api/v1/controlplane/tokens/{token_id}",
            delete(rpc!(path: token.revoke_token, RevokeTokenRequest { token_id })),
        )
        .route(
            "/api/v1/controlplane/workspaces",
            post(rpc!(body: workspace.create_workspace)),
        )
        .route(
            "/api/v1/controlplane/workspace",
            get(rpc!(empty: workspace.get_workspace)),
        )
        .route(
            "/api/v1/controlplane/workspace/storage",
            put(rpc!(body: workspace.set_storage_credentials))
                .get(rpc!(empty: workspace.get_storage_credentials)),
        )
        .route(
            "/api/v1/controlplane/secrets",
            post(rpc!(body: secret.create_secret)).get(rpc!(empty: secret.list_secrets)),
        )
        .route(
            "/api/v1/controlplane/secrets/{name}",
            put(
                |State(s): State<Rest>,
                 Path(name): Path<String>,
                 headers: HeaderMap,
                 body: Bytes| async move {
                    // The name comes from the path, as grpc-gateway binds it.
                    unary(
                        &s.auth,
                        &headers,
                        &body,
                        |mut r: tonic::Request<UpdateSecretRequest>| {
                            r.get_mut().name = name;
                            async move { s.services.secret.update_secret(r).await }
                        },
                    )
                    .await
                },
            )
            .delete(rpc!(path: secret.delete_secret, DeleteSecretRequest { name })),
        )
        .route(
            "/api/v1/controlplane/volumes",
            post(rpc!(body: volume.create_volume)).get(rpc!(empty: volume.list_volumes)),
        )
        .route(
            "/api/v1/controlplane/volumes/{name}",
            delete(rpc!(path: volume.delete_volume, DeleteVolumeRequest { name })),
        )
        .route(
            "/api/v1/controlplane/workers",
            get(rpc!(empty: worker.list_workers)),
        )
        .route(
            "/api/v1/controlplane/workers/{worker_id}/cordon",
            post(rpc!(path: worker.cordon_worker, CordonWorkerRequest { worker_id })),
        )
        .route(
            "/api/v1/controlplane/workers/{worker_id}/uncordon",
            post(rpc!(path: worker.uncordon_worker, UncordonWorkerRequest { worker_id })),
        )
        .route(
            "/api/v1/controlplane/workers/{worker_id}/drain",
            post(rpc!(path: worker.drain_worker, DrainWorkerRequest { worker_id })),
        )
        .route(
            "/api/v1/controlplane/containers",
            post(rpc!(body: container.run_container)).get(rpc!(empty: container.list_containers)),
        )
        .route(
            "/api/v1/controlplane/containers/{container_id}",
            get(rpc!(path: container.get_container, GetContainerRequest { container_id })),
        )
        .route(
            "/api/v1/controlplane/containers/{container_id}/stop",
            post(rpc!(path: container.stop_container, StopContainerRequest { container_id })),
        )
        .with_state(Rest { services, auth })
}

/// Parses the JSON body (empty means all defaults), then [`call`]s.
async fn unary<Req, Resp, F, Fut>(
    auth: &Authenticator,
    headers: &HeaderMap,
    body: &[u8],
    handler: F,
) -> Response
where
    Req: DeserializeOwned + Default,
    Resp: Serialize,
    F: FnOnce(tonic::Request<Req>) -> Fut,
    Fut: Future<Output = Result<tonic::Response<Resp>, Status>>,
{
    match message_of(body) {
        Ok(message) => call(auth, headers, message, handler).await,
        Err(status) => error_response(&status),
    }
}

/// The request a JSON body stands for: all defaults when it is empty,
/// INVALID_ARGUMENT when it is not JSON of the request's shape. Public for
/// the fuzz targets in `fuzz/` only.
#[doc(hidden)]
pub fn message_of<Req: DeserializeOwned + Default>(body: &[u8]) -> Result<Req, Status> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Req::default());
    }
    serde_json::from_slice(body).map_err(|error| {
        Status::from(ApiError::InvalidArgument(format!(
            "the request body is not valid JSON for this call: {error}"
        )))
    })
}

/// Runs the gRPC handler with the headers as metadata, and the caller
/// their token names, as the gRPC server would, and maps its answer.
async fn call<Req, Resp, F, Fut>(
    auth: &Authenticator,
    headers: &HeaderMap,
    message: Req,
    handler: F,
) -> Response
where
    Resp: Serialize,
    F: FnOnce(tonic::Request<Req>) -> Fut,
    Fut: Future<Output = Result<tonic::Response<Resp>, Status>>,
{
    let mut request = tonic::Request::new(message);
    match auth.admit(headers).await {
        Ok(Some(caller)) => {
            request.extensions_mut().insert(caller);
        }
        Ok(None) => {}
        Err(refused) => return error_response(&refused.into()),
    }
    *request.metadata_mut() = metadata_from_headers(headers);
    match handler(request).await {
        Ok(response) => Json(response.into_inner()).into_response(),
        Err(status) => error_response(&status),
    }
}

/// The gRPC metadata of a REST request: `Authorization`, and each
/// `Grpc-Metadata-<Name>` header as `<name>`; headers that make no valid
/// ASCII metadata are left out. Public for the fuzz targets in `fuzz/` only.
#[doc(hidden)]
pub fn metadata_from_headers(headers: &HeaderMap) -> MetadataMap {
    let mut metadata = MetadataMap::new();
    for (name, value) in headers {
        let name = name.as_str();
        let key = if name == "authorization" {
            name
        } else if let Some(stripped) = name.strip_prefix(METADATA_HEADER_PREFIX) {
            stripped
        } else {
            continue;
        };
        let (Ok(key), Ok(value)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value.as_bytes()),
        ) else {
            continue;
        };
        metadata.append(key, value);
    }
    metadata
}

/// The body and HTTP status of a failed call, as grpc-gateway writes them.
pub(crate) fn error_response(status: &Status) -> Response {
    let body = serde_json::json!({
        "code": status.code() as i32,
        "message": status.message(),
        "details": [],
    });
    (http_status_of(status.code()), Json(body)).into_response()
}
