//! Stubs, the functions of the workspace as stored, which the web app
//! groups into apps by the module they were defined in.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use levers9_api::v1::{GetStubRequest, ListStubsRequest, ListTasksRequest, Stub, Task};
use serde::{Deserialize, Serialize};

use crate::controlplane::call;
use crate::error::ApiError;
use crate::guard::SignedIn;
use crate::AppState;

/// How far back a stub's page looks for its tasks: the controlplane lists
/// the workspace's latest tasks, not one stub's.
const RECENT_TASKS: u32 = 1000;

pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/stubs", get(list_stubs))
        .route("/api/stubs/{id}", get(get_stub))
}

#[derive(Deserialize)]
struct Limit {
    limit: Option<u32>,
}

async fn list_stubs(
    State(s): State<Arc<AppState>>,
    _: SignedIn,
    Query(q): Query<Limit>,
) -> Result<Json<Vec<Stub>>, ApiError> {
    let reply =
        s.cp.functions()
            .list_stubs(call(ListStubsRequest {
                limit: q.limit.unwrap_or(200).min(1000),
            }))
            .await?;
    Ok(Json(reply.into_inner().stubs))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StubDetail {
    stub: Option<Stub>,
    /// Its tasks among the workspace's latest [`RECENT_TASKS`], newest first.
    recent_tasks: Vec<Task>,
    /// How many of the workspace's latest tasks were looked through.
    tasks_looked_at: u32,
}

async fn get_stub(
    State(s): State<Arc<AppState>>,
    _: SignedIn,
    Path(id): Path<String>,
) -> Result<Json<StubDetail>, ApiError> {
    let mut functions = s.cp.functions();
    let stub = functions
        .get_stub(call(GetStubRequest {
            stub_id: id.clone(),
        }))
        .await?
        .into_inner()
        .stub;
    let recent_tasks = functions
        .list_tasks(call(ListTasksRequest {
            limit: RECENT_TASKS,
        }))
        .await?
        .into_inner()
        .tasks
        .into_iter()
        .filter(|t| t.stub_id == id)
        .collect();
    Ok(Json(StubDetail {
        stub,
        recent_tasks,
        tasks_looked_at: RECENT_TASKS,
    }))
}
