//! The JSON the web app reads: the controlplane's workspace as the
//! dashboard's token sees it. Every route needs a session; every route that
//! changes something needs the CSRF token too ([`Checked`]).
//!
//! Stubs are in [`crate::stubs`], volumes in [`crate::volumes`].

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use levers9_api::v1::{
    CancelTaskRequest, Container, CreateTokenRequest, CreateTokenResponse, GetContainerRequest,
    GetTaskRequest, GetTaskResponse, GetWorkspaceRequest, ListContainersRequest,
    ListSecretsRequest, ListTasksRequest, ListTokensRequest, ListWorkersRequest,
    RevokeTokenRequest, Secret, Task, TaskState, Token, Worker, Workspace,
};
use levers9_api::Words;
use serde::Deserialize;

use crate::controlplane::call;
use crate::error::ApiError;
use crate::guard::{Checked, SignedIn};
use crate::AppState;

type Shared = State<Arc<AppState>>;

pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/workspace", get(workspace))
        .route("/api/tokens", get(list_tokens).post(create_token))
        .route("/api/tokens/{id}/revoke", post(revoke_token))
        .route("/api/tasks", get(list_tasks))
        .route("/api/tasks/{id}", get(get_task))
        .route("/api/tasks/{id}/cancel", post(cancel_task))
        .route("/api/containers", get(list_containers))
        .route("/api/containers/{id}", get(get_container))
        .route("/api/workers", get(list_workers))
        .route("/api/secrets", get(list_secrets))
}

async fn workspace(State(s): Shared, _: SignedIn) -> Result<Json<Option<Workspace>>, ApiError> {
    let reply =
        s.cp.workspaces()
            .get_workspace(call(GetWorkspaceRequest {}))
            .await?;
    Ok(Json(reply.into_inner().workspace))
}

async fn list_tokens(State(s): Shared, _: SignedIn) -> Result<Json<Vec<Token>>, ApiError> {
    let reply =
        s.cp.tokens()
            .list_tokens(call(ListTokensRequest {}))
            .await?;
    Ok(Json(reply.into_inner().tokens))
}

#[derive(Deserialize)]
struct NewToken {
    #[serde(default)]
    description: String,
}

/// Workspace tokens only: admin and worker tokens stay a CLI matter.
async fn create_token(
    State(s): Shared,
    Checked(session): Checked,
    Json(body): Json<NewToken>,
) -> Result<Json<CreateTokenResponse>, ApiError> {
    let description = if body.description.trim().is_empty() {
        format!("dashboard: {}", session.email)
    } else {
        body.description
    };
    let reply =
        s.cp.tokens()
            .create_token(call(CreateTokenRequest {
                token_type: "workspace".into(),
                description,
            }))
            .await?;
    tracing::info!(email = %session.email, "token created");
    Ok(Json(reply.into_inner()))
}

async fn revoke_token(
    State(s): Shared,
    Checked(session): Checked,
    Path(id): Path<String>,
) -> Result<Json<Option<Token>>, ApiError> {
    let reply =
        s.cp.tokens()
            .revoke_token(call(RevokeTokenRequest {
                token_id: id.clone(),
            }))
            .await?;
    tracing::info!(email = %session.email, token = %id, "token revoked");
    Ok(Json(reply.into_inner().token))
}

#[derive(Deserialize)]
struct TaskFilter {
    state: Option<String>,
    function: Option<String>,
    limit: Option<u32>,
}

/// The latest tasks, filtered by state and function name (the controlplane
/// lists by recency only, so the filter is applied here).
async fn list_tasks(
    State(s): Shared,
    _: SignedIn,
    Query(filter): Query<TaskFilter>,
) -> Result<Json<Vec<Task>>, ApiError> {
    let reply =
        s.cp.functions()
            .list_tasks(call(ListTasksRequest {
                limit: filter.limit.unwrap_or(200).min(1000),
            }))
            .await?;
    let tasks = reply
        .into_inner()
        .tasks
        .into_iter()
        .filter(|t| {
            filter
                .state
                .as_ref()
                .is_none_or(|s| s.is_empty() || TaskState::word_of(t.state) == *s)
        })
        .filter(|t| {
            filter
                .function
                .as_ref()
                .is_none_or(|f| t.function_name.contains(f.as_str()))
        })
        .collect();
    Ok(Json(tasks))
}

/// The task and its attempts, oldest first.
async fn get_task(
    State(s): Shared,
    _: SignedIn,
    Path(id): Path<String>,
) -> Result<Json<GetTaskResponse>, ApiError> {
    let reply =
        s.cp.functions()
            .get_task(call(GetTaskRequest { task_id: id }))
            .await?;
    Ok(Json(reply.into_inner()))
}

async fn cancel_task(
    State(s): Shared,
    Checked(session): Checked,
    Path(id): Path<String>,
) -> Result<Json<Option<Task>>, ApiError> {
    let reply =
        s.cp.functions()
            .cancel_task(call(CancelTaskRequest {
                task_id: id.clone(),
            }))
            .await?;
    tracing::info!(email = %session.email, task = %id, "task cancelled");
    Ok(Json(reply.into_inner().task))
}

async fn list_containers(State(s): Shared, _: SignedIn) -> Result<Json<Vec<Container>>, ApiError> {
    let reply =
        s.cp.containers()
            .list_containers(call(ListContainersRequest {}))
            .await?;
    Ok(Json(reply.into_inner().containers))
}

async fn get_container(
    State(s): Shared,
    _: SignedIn,
    Path(id): Path<String>,
) -> Result<Json<Option<Container>>, ApiError> {
    let reply =
        s.cp.containers()
            .get_container(call(GetContainerRequest { container_id: id }))
            .await?;
    Ok(Json(reply.into_inner().container))
}

async fn list_workers(State(s): Shared, _: SignedIn) -> Result<Json<Vec<Worker>>, ApiError> {
    let reply =
        s.cp.workers()
            .list_workers(call(ListWorkersRequest {}))
            .await?;
    Ok(Json(reply.into_inner().workers))
}

/// Names and dates only: the controlplane never returns a secret's value.
async fn list_secrets(State(s): Shared, _: SignedIn) -> Result<Json<Vec<Secret>>, ApiError> {
    let reply =
        s.cp.secrets()
            .list_secrets(call(ListSecretsRequest {}))
            .await?;
    Ok(Json(reply.into_inner().secrets))
}
