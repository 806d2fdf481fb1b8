//! Deployed apps: the functions of each app's current version, with the
//! stub each one runs.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use levers9_api::v1::{Deployment, ListDeploymentsRequest};

use crate::controlplane::call;
use crate::error::ApiError;
use crate::guard::SignedIn;
use crate::AppState;

pub fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/api/deployments", get(list_deployments))
}

async fn list_deployments(
    State(s): State<Arc<AppState>>,
    _: SignedIn,
) -> Result<Json<Vec<Deployment>>, ApiError> {
    let reply =
        s.cp.functions()
            .list_deployments(call(ListDeploymentsRequest {}))
            .await?;
    Ok(Json(reply.into_inner().deployments))
}
