//! What the web app follows live, as server-sent events: a container's log,
//! and a task's own output, retries and outcome.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::StreamExt as _;
use levers9_api::v1::{
    container_log_event, run_event, ContainerLogEvent, FinalTaskState, RunEvent,
    StreamContainerLogsRequest, WaitTaskRequest,
};
use levers9_api::Words;
use serde::Serialize;

use crate::error::ApiError;
use crate::guard::SignedIn;
use crate::AppState;

pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/containers/{id}/logs", get(container_logs))
        .route("/api/tasks/{id}/events", get(task_events))
}

#[derive(Serialize)]
struct Output {
    stream: String,
    text: String,
}

/// A gRPC stream as events; a failure mid-way is one `failure` event.
fn events<T: Send + 'static>(
    stream: tonic::Streaming<T>,
    to_event: fn(T) -> Result<Event, axum::Error>,
) -> Response {
    let events = stream.map(move |item| {
        let event = match item {
            Ok(message) => to_event(message),
            Err(status) => Event::default()
                .event("failure")
                .json_data(serde_json::json!({ "error": status.message() })),
        };
        Ok::<_, std::convert::Infallible>(
            event.unwrap_or_else(|_| Event::default().comment("unserialisable")),
        )
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// `log` events while the container runs, then one `exited` event with the
/// container as it ended.
async fn container_logs(
    State(s): State<Arc<AppState>>,
    _: SignedIn,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    // No deadline: it lasts as long as the container runs and the page is open.
    let stream =
        s.cp.containers()
            .stream_container_logs(StreamContainerLogsRequest {
                container_id: id,
                follow: true,
            })
            .await?
            .into_inner();
    Ok(events(stream, |event: ContainerLogEvent| {
        match event.kind {
            Some(container_log_event::Kind::Log(chunk)) => {
                Event::default().event("log").json_data(Output {
                    stream: chunk.stream,
                    text: String::from_utf8_lossy(&chunk.data).into_owned(),
                })
            }
            Some(container_log_event::Kind::Exited(container)) => {
                Event::default().event("exited").json_data(container)
            }
            None => Ok(Event::default().comment("empty")),
        }
    }))
}

/// The task's own output (`output`), each retry (`retrying`: attempt and
/// reason), then its outcome (`result`: state, message, traceback; the
/// pickled value stays with the SDK). A task that has ended sends its
/// outcome at once.
async fn task_events(
    State(s): State<Arc<AppState>>,
    _: SignedIn,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let stream =
        s.cp.functions()
            .wait_task(WaitTaskRequest { task_id: id })
            .await?
            .into_inner();
    Ok(events(stream, |event: RunEvent| match event.kind {
        Some(run_event::Kind::Output(output)) => {
            Event::default().event("output").json_data(Output {
                stream: output.stream,
                text: String::from_utf8_lossy(&output.data).into_owned(),
            })
        }
        Some(run_event::Kind::Retrying(retry)) => Event::default()
            .event("retrying")
            .json_data(serde_json::json!({ "attempt": retry.attempt, "reason": retry.reason })),
        Some(run_event::Kind::Result(outcome)) => {
            Event::default()
                .event("result")
                .json_data(serde_json::json!({
                    "state": FinalTaskState::word_of(outcome.state),
                    "message": outcome.message,
                    "traceback": outcome.traceback,
                }))
        }
        // Acceptances, batched results and a generator's items belong to
        // Run streams; WaitTask sends none of them.
        Some(
            run_event::Kind::Accepted(_) | run_event::Kind::Results(_) | run_event::Kind::Item(_),
        )
        | None => Ok(Event::default().comment("accepted")),
    }))
}
