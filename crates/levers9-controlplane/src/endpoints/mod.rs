//! Web endpoints: functions of deployed apps served by the HTTP listener at
//! `/endpoint/<workspace name>/<endpoint name>`, JSON in and out, and at
//! `…/<endpoint name>@<version>` as a version of their app served them
//! (docs/endpoints.md).
//!
//! A request becomes one task of the endpoint's stub, exactly as a
//! `.remote()` is one `Call`: same dispatcher, same warm containers, same
//! autoscaling on queued inputs, same `max_containers`. Its keyword
//! arguments reach the runner as a JSON object rather than a pickle (a
//! pickle starts with the PROTO opcode, never `{`), and the runner answers
//! such an input with its value as JSON. An ASGI endpoint's input is the
//! whole HTTP request instead (see [`asgi`]), and its answer may stream
//! (see [`streamed`]); a websocket to it is one task too (see [`websocket`]).

mod asgi;
mod call;
mod lookup;
mod pin;
mod request;
mod streamed;
mod websocket;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Path, State};
use axum::http::header::UPGRADE;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use levers9_api::v1::DeployedFunction;
use levers9_store::{EndpointKind, NewEndpoint};

use crate::error::ApiError;
use crate::rest::error_response;
use crate::services::FunctionApi;
use crate::Shared;

const MAX_NAME: usize = 64;

/// The endpoints a deploy names; InvalidArgument naming the function for a
/// name that cannot be a path segment.
pub(crate) fn of_deploy(functions: &[DeployedFunction]) -> Result<Vec<NewEndpoint>, ApiError> {
    functions
        .iter()
        .filter_map(|f| f.endpoint.as_ref().map(|e| (f, e)))
        .map(|(f, e)| {
            check_name(&e.name).map_err(|problem| {
                ApiError::InvalidArgument(format!(
                    "the endpoint of {:?}: {problem}",
                    f.function_name
                ))
            })?;
            Ok(NewEndpoint {
                function_name: f.function_name.clone(),
                name: e.name.clone(),
                public: e.public,
                kind: if e.asgi {
                    EndpointKind::Asgi
                } else {
                    EndpointKind::Json
                },
            })
        })
        .collect()
}

/// Names are one URL path segment that needs no escaping, without `@`:
/// `name@3` pins a version (see [`pin`]).
fn check_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty()
        || name.len() > MAX_NAME
        || name.starts_with('.')
        || !name.chars().all(allowed)
    {
        return Err(format!(
            "name {name:?} is not valid: use 1 to {MAX_NAME} letters, digits, '-', '_' or '.', \
             not starting with '.'"
        ));
    }
    Ok(())
}

/// The routes under `/endpoint`.
pub fn router(shared: Arc<Shared>, function: Arc<FunctionApi>) -> Router {
    let gateway = Arc::new(call::Gateway::new(shared, function));
    Router::new()
        .route("/endpoint/{workspace}/{name}", any(serve))
        .route("/endpoint/{workspace}/{name}/", any(serve))
        .route("/endpoint/{workspace}/{name}/{*path}", any(serve_path))
        .with_state(gateway)
}

async fn serve(
    State(gateway): State<Arc<call::Gateway>>,
    Path((workspace, name)): Path<(String, String)>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let upgrade = match websocket_upgrade(upgrade, &headers) {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    let request = call::HttpRequest {
        method,
        path: "/".to_owned(),
        uri,
        headers,
        body,
    };
    answer(gateway.serve(&workspace, &name, request, upgrade).await)
}

/// A path under the endpoint's, for ASGI apps.
async fn serve_path(
    State(gateway): State<Arc<call::Gateway>>,
    Path((workspace, name, path)): Path<(String, String, String)>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let upgrade = match websocket_upgrade(upgrade, &headers) {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    let request = call::HttpRequest {
        method,
        path: format!("/{path}"),
        uri,
        headers,
        body,
    };
    answer(gateway.serve(&workspace, &name, request, upgrade).await)
}

/// The websocket a request asks for, if any; a request that asks for one
/// but is not a valid websocket handshake gets axum's answer saying why.
fn websocket_upgrade(
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    headers: &HeaderMap,
) -> Result<Option<WebSocketUpgrade>, WebSocketUpgradeRejection> {
    let asks = headers
        .get(UPGRADE)
        .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"websocket"));
    match upgrade {
        Ok(upgrade) => Ok(Some(upgrade)),
        Err(rejection) if asks => Err(rejection),
        Err(_) => Ok(None),
    }
}

fn answer(result: Result<Response, tonic::Status>) -> Response {
    match result {
        Ok(response) => response,
        Err(status) => error_response(&status),
    }
}

#[cfg(test)]
mod tests {
    use levers9_api::v1::EndpointSpec;

    use super::*;

    fn function(name: &str, endpoint: Option<&str>) -> DeployedFunction {
        DeployedFunction {
            function_name: name.into(),
            stub_id: "stub".into(),
            schedule: None,
            endpoint: endpoint.map(|n| EndpointSpec {
                name: n.into(),
                public: true,
                asgi: n.starts_with("app"),
            }),
        }
    }

    #[test]
    fn a_deploy_names_its_endpoints_and_refuses_names_that_are_not_a_path_segment() {
        let endpoints =
            of_deploy(&[function("f", Some("hello-1.v2")), function("g", None)]).unwrap();
        assert_eq!(
            endpoints,
            [NewEndpoint {
                function_name: "f".into(),
                name: "hello-1.v2".into(),
                public: true,
                kind: EndpointKind::Json,
            }]
        );
        let apps = of_deploy(&[function("f", Some("app-1"))]).unwrap();
        assert_eq!(apps[0].kind, EndpointKind::Asgi);
        for bad in ["", "a/b", "..", "with space", "greet@3", &"x".repeat(65)] {
            let err = of_deploy(&[function("f", Some(bad))]).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with(&format!("the endpoint of \"f\": name {bad:?} is not valid")),
                "{err}"
            );
        }
    }
}
