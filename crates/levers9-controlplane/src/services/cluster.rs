//! ClusterService: workers wanted per pool, for the agents of attached
//! clusters.

use std::sync::Arc;

use levers9_api::v1::{
    cluster_service_server::ClusterService, GetWorkersWantedRequest, GetWorkersWantedResponse,
    PoolScaling,
};
use levers9_store::TokenType;
use tonic::{Request, Response, Status};

use crate::auth::authorized;
use crate::error::ApiError;
use crate::scheduler::demand;
use crate::Shared;

/// The ClusterService implementation.
pub struct ClusterApi {
    shared: Arc<Shared>,
}

impl ClusterApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

#[tonic::async_trait]
impl ClusterService for ClusterApi {
    async fn get_workers_wanted(
        &self,
        request: Request<GetWorkersWantedRequest>,
    ) -> Result<Response<GetWorkersWantedResponse>, Status> {
        let caller = authorized(
            &request,
            &[TokenType::Worker, TokenType::Admin],
            "ask for a pool's workers wanted",
        )?;
        let request = request.into_inner();
        if request.pool.is_empty() {
            return Err(ApiError::InvalidArgument(
                "pool is empty: name the pool, e.g. --pool l40s".into(),
            )
            .into());
        }
        if caller.token_type == TokenType::Worker {
            // Only agents ask with a worker token: their pool is known
            // from now on, even with no worker yet.
            demand::note_agent(&self.shared.scheduling, &request.pool).await?;
        }
        let asked = request.scaling.map(|s| levers9_config::PoolScaling {
            min_workers: s.min_workers,
            max_workers: s.max_workers,
            requests_per_worker: s.requests_per_worker.max(1),
        });
        let demand = demand::read(&self.shared.scheduling, &request.pool, asked).await?;
        Ok(Response::new(GetWorkersWantedResponse {
            pool: request.pool,
            wanted: demand.wanted,
            waiting: demand.waiting,
            present: demand.present,
            busy: demand.busy,
            scaling: Some(PoolScaling {
                min_workers: demand.scaling.min_workers,
                max_workers: demand.scaling.max_workers,
                requests_per_worker: demand.scaling.requests_per_worker,
            }),
        }))
    }
}
