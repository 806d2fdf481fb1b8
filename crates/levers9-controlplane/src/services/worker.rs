//! WorkerService: the workers' streams, and the list of workers.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use levers9_api::v1::{
    worker_service_server::WorkerService, Capacity, ControlplaneMessage, CordonWorkerRequest,
    CordonWorkerResponse, DrainWorkerRequest, DrainWorkerResponse, Gpu, ListWorkersRequest,
    ListWorkersResponse, UncordonWorkerRequest, UncordonWorkerResponse, Worker, WorkerMessage,
};
use levers9_store::TokenType;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::auth::{authorized, Caller, ADMINS};
use crate::error::ApiError;
use crate::fleet::attach;
use crate::functions::worker_stream::StreamTasks;
use crate::machines::WorkerBinding;
use crate::sealing::SecretOpener;
use crate::{wire_states, Shared};

/// The WorkerService implementation.
pub struct WorkerApi {
    shared: Arc<Shared>,
}

impl WorkerApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

type Outbound = Pin<Box<dyn Stream<Item = Result<ControlplaneMessage, Status>> + Send>>;

#[tonic::async_trait]
impl WorkerService for WorkerApi {
    type AttachStream = Outbound;

    async fn attach(
        &self,
        request: Request<Streaming<WorkerMessage>>,
    ) -> Result<Response<Self::AttachStream>, Status> {
        let caller = authorized(
            &request,
            &[TokenType::Worker, TokenType::Admin],
            "attach a worker",
        )?;
        let binding = WorkerBinding::of(&self.shared.machines, &caller).await?;
        let mut inbound = request.into_inner();
        let (worker, outbound, sender) =
            attach::open(&self.shared.fleet, &caller, &binding, &mut inbound).await?;
        let secrets = SecretOpener {
            sealed: self.shared.sealed.clone(),
            keyring: self.shared.keyring.clone(),
        };
        let tasks = StreamTasks::new(self.shared.tasks.clone(), self.shared.task_logs.clone());
        tokio::spawn(attach::serve(
            self.shared.scheduling.clone(),
            worker,
            inbound,
            sender,
            secrets,
            tasks,
        ));
        Ok(Response::new(Box::pin(ReceiverStream::new(outbound))))
    }

    async fn list_workers(
        &self,
        request: Request<ListWorkersRequest>,
    ) -> Result<Response<ListWorkersResponse>, Status> {
        authorized(
            &request,
            &[TokenType::Admin, TokenType::Workspace],
            "list workers",
        )?;
        let fleet = &self.shared.fleet;
        let cordoned = fleet.cordoned().await?;
        let mut workers = Vec::new();
        for id in fleet.worker_ids().await? {
            let Some(record) = fleet.worker(&id).await? else {
                continue;
            };
            let alive = fleet.is_alive(&id).await?;
            let containers = fleet.worker_containers(&id).await?.len();
            let free = fleet.free_capacity(&id).await?.unwrap_or_default();
            workers.push(Worker {
                worker_id: record.id,
                pool: record.pool,
                hostname: record.hostname,
                runtime: record.runtime,
                capacity: Some(Capacity {
                    cpu_millicores: record.cpu_millicores,
                    memory_mib: record.memory_mib,
                    gpus: record
                        .gpus
                        .into_iter()
                        .map(|(gpu_type, device_ids)| Gpu {
                            gpu_type,
                            count: u32::try_from(device_ids.len()).unwrap_or(u32::MAX),
                            device_ids,
                        })
                        .collect(),
                }),
                free: Some(Capacity {
                    cpu_millicores: u64::try_from(free.get(crate::fleet::CPU)).unwrap_or(0),
                    memory_mib: u64::try_from(free.get(crate::fleet::MEMORY)).unwrap_or(0),
                    // Free GPUs by type: the device ids are the worker's to pick.
                    gpus: free
                        .counters
                        .iter()
                        .filter_map(|(name, n)| {
                            let gpu_type = name.strip_prefix("gpu:")?;
                            Some(Gpu {
                                gpu_type: gpu_type.to_owned(),
                                device_ids: Vec::new(),
                                count: u32::try_from(*n).unwrap_or(0),
                            })
                        })
                        .collect(),
                }),
                cordoned: cordoned.contains(&id),
                containers: u32::try_from(containers).unwrap_or(u32::MAX),
                status: wire_states::worker_status(alive).into(),
                last_heartbeat_at: record
                    .last_heartbeat_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            });
        }
        workers.sort_by(|a, b| (&a.pool, &a.worker_id).cmp(&(&b.pool, &b.worker_id)));
        Ok(Response::new(ListWorkersResponse { workers }))
    }

    async fn cordon_worker(
        &self,
        request: Request<CordonWorkerRequest>,
    ) -> Result<Response<CordonWorkerResponse>, Status> {
        let caller = authorized(
            &request,
            &[TokenType::Admin, TokenType::Worker],
            "cordon a worker",
        )?;
        let id = self
            .own(&caller, &request.get_ref().worker_id, "cordon")
            .await?;
        self.shared.fleet.set_cordoned(&id, true).await?;
        tracing::info!(worker_id = %id, "worker cordoned");
        Ok(Response::new(CordonWorkerResponse {}))
    }

    async fn uncordon_worker(
        &self,
        request: Request<UncordonWorkerRequest>,
    ) -> Result<Response<UncordonWorkerResponse>, Status> {
        authorized(&request, ADMINS, "uncordon a worker")?;
        let id = self.known(&request.get_ref().worker_id).await?;
        self.set_draining(&id, false).await?;
        tracing::info!(worker_id = %id, "worker uncordoned");
        Ok(Response::new(UncordonWorkerResponse {}))
    }

    async fn drain_worker(
        &self,
        request: Request<DrainWorkerRequest>,
    ) -> Result<Response<DrainWorkerResponse>, Status> {
        let caller = authorized(
            &request,
            &[TokenType::Admin, TokenType::Worker],
            "drain a worker",
        )?;
        WorkerBinding::of(&self.shared.machines, &caller)
            .await?
            .allow(&request.get_ref().worker_id, None)?;
        let id = self
            .own(&caller, &request.get_ref().worker_id, "drain")
            .await?;
        self.set_draining(&id, true).await?;
        let containers = self.shared.fleet.worker_containers(&id).await?.len();
        tracing::info!(worker_id = %id, containers, "worker draining");
        Ok(Response::new(DrainWorkerResponse {
            containers: u32::try_from(containers).unwrap_or(u32::MAX),
        }))
    }
}

impl WorkerApi {
    /// The id of a registered worker, or NotFound naming the way to list them.
    async fn known(&self, worker_id: &str) -> Result<String, ApiError> {
        if self.shared.fleet.worker(worker_id).await?.is_none() {
            return Err(ApiError::NotFound(format!(
                "no worker {worker_id:?}: see `levers9 worker list`"
            )));
        }
        Ok(worker_id.to_owned())
    }

    /// The id of a registered worker `caller` may `action`: any for an
    /// admin, only the workers it registered for a worker token.
    async fn own(
        &self,
        caller: &Caller,
        worker_id: &str,
        action: &str,
    ) -> Result<String, ApiError> {
        let record = self.shared.fleet.worker(worker_id).await?;
        let Some(record) = record else {
            return Err(ApiError::NotFound(format!(
                "no worker {worker_id:?}: see `levers9 worker list`"
            )));
        };
        if caller.token_type == TokenType::Worker && record.token_id != caller.token_id {
            return Err(ApiError::PermissionDenied(format!(
                "a worker token may {action} only the worker that registered with it, not \
                 {worker_id:?}: use an admin token"
            )));
        }
        Ok(record.id)
    }

    /// Cordons a worker and drains it, or lifts both.
    async fn set_draining(&self, worker_id: &str, draining: bool) -> Result<(), ApiError> {
        Ok(self.shared.fleet.set_draining(worker_id, draining).await?)
    }
}
