//! One request to an endpoint: who may call it, the call, and its outcome
//! as an HTTP answer.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::WebSocketUpgrade;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use levers9_api::v1::{run_event, TaskItemEvent, TaskOutcome};
use levers9_state::HotState;
use levers9_store::{EndpointKind, FinalState};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::Status;

use super::lookup::{Endpoints, Pinned, Resolved};
use super::{asgi, pin, request, streamed, websocket};
use crate::auth::{missing_token, USERS};
use crate::error::ApiError;
use crate::services::FunctionApi;
use crate::{wire_states, Shared};

/// How long a request may wait beyond its function's timeout: for a
/// container to start and for the inputs queued ahead of it. Past it the
/// caller gets 504 and the task is cancelled.
const START_ALLOWANCE: Duration = Duration::from_secs(120);

/// One HTTP request to an endpoint.
pub(super) struct HttpRequest {
    pub method: Method,
    /// Under the endpoint's path, percent-decoded, from `/`.
    pub path: String,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Serves every endpoint of the install.
pub(super) struct Gateway {
    shared: Arc<Shared>,
    function: Arc<FunctionApi>,
    endpoints: Endpoints,
}

impl Gateway {
    pub(super) fn new(shared: Arc<Shared>, function: Arc<FunctionApi>) -> Self {
        Self {
            endpoints: Endpoints::new(shared.functions.clone()),
            shared,
            function,
        }
    }

    /// The hot state, where websocket connections keep their inboxes.
    pub(super) fn state(&self) -> Arc<dyn HotState> {
        self.shared.state.clone()
    }

    /// Calls the endpoint `name` of the workspace named `workspace` (or,
    /// for `name@3`, the endpoint as version 3 of its app served it) with
    /// the request and answers with its value as JSON (or, for an ASGI
    /// app, with the app's answer, or the websocket it accepts when
    /// `upgrade` asks for one).
    pub(super) async fn serve(
        &self,
        workspace: &str,
        name: &str,
        request: HttpRequest,
        upgrade: Option<WebSocketUpgrade>,
    ) -> Result<Response, Status> {
        let (base, version) = pin::split(name)?;
        let (found, missing) = match version {
            None => (self.endpoints.find(workspace, base).await?, None),
            Some(version) => match self.endpoints.find_pinned(workspace, base, version).await? {
                Some(Pinned::Found(endpoint)) => (Some(endpoint), None),
                // Whoever may call the endpoint now learns which versions it has.
                Some(Pinned::Missing { current, versions }) => {
                    (Some(current), Some((version, versions)))
                }
                None => (None, None),
            },
        };
        let endpoint = self
            .authorize(workspace, base, found, &request.headers)
            .await?;
        if let Some((version, versions)) = missing {
            let record = &endpoint.record;
            return Err(pin::no_such_version(
                workspace,
                base,
                version,
                &record.app_name,
                record.version,
                &versions,
            )
            .into());
        }
        let root_path = format!("/endpoint/{workspace}/{name}");
        if let Some(upgrade) = upgrade {
            if endpoint.record.kind != EndpointKind::Asgi {
                return Err(ApiError::InvalidArgument(format!(
                    "endpoint {name:?} answers JSON requests; websockets are served by @asgi apps"
                ))
                .into());
            }
            return websocket::open(self, &endpoint, &request, &root_path, upgrade).await;
        }
        let payload = match endpoint.record.kind {
            EndpointKind::Json => {
                if request.path != "/" {
                    return Err(not_found(workspace, &format!("{name}{}", request.path)).into());
                }
                if request.method != Method::GET && request.method != Method::POST {
                    return Err(ApiError::InvalidArgument(format!(
                        "endpoint {name:?} takes GET or POST, not {}",
                        request.method
                    ))
                    .into());
                }
                request::arguments(&request.method, &request.uri, &request.body)?
            }
            EndpointKind::Asgi => asgi::input(&request, &root_path, !endpoint.record.public, None),
        };
        match self.call(&endpoint, payload).await? {
            Answer::Whole(outcome) => Ok(respond(endpoint.record.kind, outcome)?),
            Answer::Streamed(first, rest) => Ok(streamed::response(first, rest)?),
        }
    }

    /// A public endpoint is served to anyone. Otherwise the caller needs a
    /// token of the endpoint's workspace; without a valid one it gets 401
    /// whether or not the name exists, and with one of another workspace
    /// 404, as for a name that does not exist: neither learns which names a
    /// workspace has.
    async fn authorize(
        &self,
        workspace: &str,
        name: &str,
        found: Option<Resolved>,
        headers: &HeaderMap,
    ) -> Result<Resolved, ApiError> {
        if let Some(endpoint) = found.as_ref().filter(|e| e.record.public) {
            return Ok(endpoint.clone());
        }
        let caller = self
            .shared
            .auth
            .admit(headers)
            .await?
            .ok_or_else(missing_token)?;
        caller.require(USERS, "call endpoints")?;
        match found {
            Some(endpoint) if endpoint.record.workspace_id == caller.workspace.id => Ok(endpoint),
            _ => Err(not_found(workspace, name)),
        }
    }

    /// Runs the call and waits for its outcome or its first item (an ASGI
    /// app's streamed answer), at most the function's timeout and
    /// [`START_ALLOWANCE`]; a caller that goes away first drops the call,
    /// which cancels its task.
    pub(super) async fn call(
        &self,
        endpoint: &Resolved,
        payload: Vec<u8>,
    ) -> Result<Answer, Status> {
        let record = &endpoint.record;
        let (receipts, taken) = mpsc::unbounded_channel();
        let mut events = self
            .function
            .call_stub(
                &record.workspace_id,
                &record.stub_id,
                payload,
                UnboundedReceiverStream::new(taken).boxed(),
            )
            .await?;
        let wait = endpoint.timeout + START_ALLOWANCE;
        let first = tokio::time::timeout(wait, async {
            while let Some(event) = events.next().await {
                match event?.kind {
                    Some(run_event::Kind::Result(outcome)) => return Ok(First::Outcome(outcome)),
                    Some(run_event::Kind::Item(item)) => return Ok(First::Item(item)),
                    _ => {}
                }
            }
            Err(ApiError::Interrupted("the call ended without a result; call again".into()).into())
        })
        .await;
        match first {
            Ok(Ok(First::Outcome(outcome))) => Ok(Answer::Whole(outcome)),
            Ok(Ok(First::Item(item))) => {
                Ok(Answer::Streamed(item, streamed::Rest { events, receipts }))
            }
            Ok(Err(status)) => Err(status),
            Err(_) => Err(ApiError::DeadlineExceeded(format!(
                "no result within {} s (the function's timeout and {} s to start a \
                 container); the call was cancelled",
                wait.as_secs(),
                START_ALLOWANCE.as_secs()
            ))
            .into()),
        }
    }
}

/// The first of a call's events that matters.
enum First {
    Outcome(TaskOutcome),
    Item(TaskItemEvent),
}

/// A call's answer.
pub(super) enum Answer {
    /// The outcome came first: the answer whole.
    Whole(TaskOutcome),
    /// An item came first: the answer streamed, from that item.
    Streamed(TaskItemEvent, streamed::Rest),
}

fn not_found(workspace: &str, name: &str) -> ApiError {
    ApiError::NotFound(format!(
        "no endpoint {name:?} in workspace {workspace:?}: deploy a function with \
         @levers9.endpoint(name={name:?}) in it (levers9 deploy)"
    ))
}

/// 200 with the value the runner encoded as JSON, or the ASGI app's own
/// answer; the function's exception is 500 and its timeout 504, with the
/// message the runner wrote.
fn respond(kind: EndpointKind, outcome: TaskOutcome) -> Result<Response, ApiError> {
    match wire_states::final_state_from_wire(outcome.state()) {
        Some(FinalState::Complete) if kind == EndpointKind::Asgi => asgi::response(outcome.payload),
        Some(FinalState::Complete) => {
            Ok(([(CONTENT_TYPE, "application/json")], outcome.payload).into_response())
        }
        Some(FinalState::Error | FinalState::Timeout | FinalState::Cancelled) | None => {
            Err(failure(outcome))
        }
    }
}

/// The error a call that did not complete answers with.
pub(super) fn failure(outcome: TaskOutcome) -> ApiError {
    match wire_states::final_state_from_wire(outcome.state()) {
        Some(FinalState::Timeout) => ApiError::DeadlineExceeded(outcome.message),
        Some(FinalState::Cancelled) => {
            ApiError::FunctionFailed(format!("the call was cancelled: {}", outcome.message))
        }
        Some(FinalState::Complete | FinalState::Error) | None => {
            ApiError::FunctionFailed(outcome.message)
        }
    }
}
