//! ContainerService: containers of the caller's workspace.

mod exec;

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::Stream;
use levers9_api::v1::{
    container_service_server::ContainerService, ContainerLogEvent, ExecRequest,
    GetContainerRequest, GetContainerResponse, ListContainersRequest, ListContainersResponse,
    RunContainerRequest, RunContainerResponse, StopContainerRequest, StopContainerResponse,
    StreamContainerLogsRequest,
};
use levers9_store::{SealedId, SealedKind};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::auth::{authorized, Caller, USERS};
use crate::error::ApiError;
use crate::fleet::follow_logs;
use crate::fleet::records::{ContainerRecord, ContainerState};
use crate::scheduler::{self, send_stop, Scheduling};
use crate::Shared;

/// CPU of a container run directly (`levers9 container run`, a sandbox) that
/// names none: a whole core, since such a container is usually one
/// interactive or long job, not one of many warm copies of a function
/// (whose default is `functions::spec::FUNCTION_DEFAULT_CPU_MILLICORES`).
const CONTAINER_DEFAULT_CPU_MILLICORES: u64 = 1000;
const CONTAINER_DEFAULT_MEMORY_MIB: u64 = 512;
/// How long stopping a pending container waits for the scheduler to act
/// (it reads its queue every pass, a fraction of a second).
const STOP_PENDING_WAIT: Duration = Duration::from_secs(5);

/// The ContainerService implementation.
pub struct ContainerApi {
    shared: Arc<Shared>,
}

impl ContainerApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// The caller's container; another workspace's looks like a missing one.
    async fn own(&self, caller: &Caller, id: &str) -> Result<ContainerRecord, ApiError> {
        match self.shared.fleet.container(id).await? {
            Some(c) if c.workspace_id == caller.workspace.id => Ok(c),
            _ => Err(ApiError::NotFound(format!(
                "no container {id:?} in this workspace: see levers9 container list"
            ))),
        }
    }
}

/// A full image reference: a name without a registry (the first part has no
/// `.` or `:` and is not `localhost`, as `docker pull` decides) is looked up
/// in `worker.imageRegistry`.
pub(super) fn qualify_image(image: &str, registry: &str) -> Result<String, ApiError> {
    if image.is_empty() {
        return Err(ApiError::InvalidArgument(
            "the image is empty: name an image reference".into(),
        ));
    }
    let first = image.split('/').next().unwrap_or_default();
    let has_registry =
        image.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    if has_registry {
        return Ok(image.to_owned());
    }
    if registry.is_empty() {
        return Err(ApiError::InvalidArgument(format!(
            "image {image:?} names no registry and worker.imageRegistry is not set: give a full \
             reference such as registry.example.com/team/app@sha256:…"
        )));
    }
    Ok(format!("{}/{image}", registry.trim_end_matches('/')))
}

/// Refuses secrets that do not exist in the workspace, or that clash with
/// an environment variable of the same name.
pub(super) async fn check_secrets(
    shared: &Shared,
    workspace_id: &str,
    secrets: &[String],
    env: &BTreeMap<String, String>,
) -> Result<(), ApiError> {
    let mut variables = BTreeMap::new();
    for name in secrets {
        // What the container sees: an inline secret's variable, not its
        // stored name.
        let variable = crate::sealing::env_name(name);
        if env.contains_key(variable) {
            return Err(ApiError::InvalidArgument(format!(
                "{variable} is both an environment variable and a secret: keep one"
            )));
        }
        if variables
            .insert(variable, name)
            .is_some_and(|other| other != name)
        {
            return Err(ApiError::InvalidArgument(format!(
                "two secrets set {variable} (an inline one and a named one, or two inline \
                 ones with different values): keep one"
            )));
        }
        let id = SealedId {
            kind: SealedKind::Secret,
            workspace_id: workspace_id.to_owned(),
            name: name.clone(),
        };
        if shared.sealed.get_sealed(&id).await?.is_none() {
            let fix = if variable == name {
                format!("create it with levers9 secret create {name}")
            } else {
                "it was deleted: the SDK stores it again (Secret.from_dict) when its caller runs"
                    .to_owned()
            };
            return Err(ApiError::InvalidArgument(format!(
                "no secret {name:?} in this workspace: {fix}"
            )));
        }
    }
    Ok(())
}

type LogStream = Pin<Box<dyn Stream<Item = Result<ContainerLogEvent, Status>> + Send>>;

#[tonic::async_trait]
impl ContainerService for ContainerApi {
    async fn run_container(
        &self,
        request: Request<RunContainerRequest>,
    ) -> Result<Response<RunContainerResponse>, Status> {
        let caller = authorized(&request, USERS, "manage containers")?;
        let body = request.into_inner();
        let image = qualify_image(body.image.trim(), &self.shared.image_registry)?;
        // Empty: any pool that takes requests naming none.
        let pool = body.pool;
        let fleet = &self.shared.fleet;
        fleet.require_pool(&pool).await?;
        let gpu_count = crate::fleet::gpu_count(&body.gpu_types, body.gpu_count)?;
        let env: BTreeMap<String, String> = body.env.into_iter().collect();
        check_secrets(&self.shared, &caller.workspace.id, &body.secrets, &env).await?;
        let container = ContainerRecord {
            args: body.args,
            env,
            pool,
            cpu_millicores: if body.cpu_millicores == 0 {
                CONTAINER_DEFAULT_CPU_MILLICORES
            } else {
                body.cpu_millicores
            },
            memory_mib: if body.memory_mib == 0 {
                CONTAINER_DEFAULT_MEMORY_MIB
            } else {
                body.memory_mib
            },
            secrets: body.secrets,
            gpu_count,
            gpu_types: body.gpu_types,
            ..ContainerRecord::pending(caller.workspace.id.clone(), image)
        };
        scheduler::enqueue(&self.shared.scheduling, &container).await?;
        tracing::info!(container_id = %container.id, workspace_id = %caller.workspace.id, image = %container.image, pool = %container.pool, "container requested");
        Ok(Response::new(RunContainerResponse {
            container: Some(container.to_api()),
        }))
    }

    async fn list_containers(
        &self,
        request: Request<ListContainersRequest>,
    ) -> Result<Response<ListContainersResponse>, Status> {
        let caller = authorized(&request, USERS, "manage containers")?;
        let containers = self
            .shared
            .fleet
            .workspace_containers(&caller.workspace.id)
            .await?;
        Ok(Response::new(ListContainersResponse {
            containers: containers.iter().map(ContainerRecord::to_api).collect(),
        }))
    }

    async fn get_container(
        &self,
        request: Request<GetContainerRequest>,
    ) -> Result<Response<GetContainerResponse>, Status> {
        let caller = authorized(&request, USERS, "manage containers")?;
        let container = self.own(&caller, &request.get_ref().container_id).await?;
        Ok(Response::new(GetContainerResponse {
            container: Some(container.to_api()),
        }))
    }

    async fn stop_container(
        &self,
        request: Request<StopContainerRequest>,
    ) -> Result<Response<StopContainerResponse>, Status> {
        let caller = authorized(&request, USERS, "manage containers")?;
        let mut container = self.own(&caller, &request.get_ref().container_id).await?;
        let fleet = &self.shared.fleet;
        match container.state {
            ContainerState::Pending => {
                container = stop_pending(&self.shared.scheduling, container).await?
            }
            ContainerState::Exited | ContainerState::Failed | ContainerState::Lost => {}
            ContainerState::Scheduled | ContainerState::Running => {
                send_stop(fleet, &container.worker_id, &container.id).await?;
            }
        }
        Ok(Response::new(StopContainerResponse {
            container: Some(container.to_api()),
        }))
    }

    type StreamContainerLogsStream = LogStream;

    async fn stream_container_logs(
        &self,
        request: Request<StreamContainerLogsRequest>,
    ) -> Result<Response<Self::StreamContainerLogsStream>, Status> {
        let caller = authorized(&request, USERS, "manage containers")?;
        let body = request.into_inner();
        self.own(&caller, &body.container_id).await?;
        let fleet = self.shared.fleet.clone();
        // Subscribe before reading what is stored, so nothing falls between
        // the two; sequence numbers drop what arrives twice.
        let live = if body.follow {
            Some(fleet.follow_container(&body.container_id).await?)
        } else {
            None
        };
        let (tx, rx) = mpsc::channel(256);
        tokio::spawn(follow_logs(fleet, body.container_id, live, tx));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    type ExecContainerStream = exec::ExecStream;

    async fn exec_container(
        &self,
        request: Request<Streaming<ExecRequest>>,
    ) -> Result<Response<Self::ExecContainerStream>, Status> {
        let caller = authorized(&request, USERS, "manage containers")?;
        let mut requests = request.into_inner();
        let start = exec::read_start(&mut requests).await?;
        let container = self.own(&caller, &start.container_id).await?;
        exec::require_running(&container)?;
        let events = exec::open(self.shared.fleet.clone(), container, start, requests).await?;
        Ok(Response::new(events))
    }
}

/// Withdraws a request no worker has taken yet and waits for the
/// scheduler, the only writer of a pending record, to fail it. One it
/// placed before seeing the mark is stopped on its worker instead. Past
/// the wait, the record is returned still pending: the mark outlives any
/// wait for room, so the scheduler fails it when it next reads it.
async fn stop_pending(
    scheduling: &Scheduling,
    request: ContainerRecord,
) -> Result<ContainerRecord, ApiError> {
    let fleet = scheduling.fleet();
    scheduling
        .withdraw(
            std::slice::from_ref(&request.id),
            "stopped before it started",
        )
        .await?;
    let deadline = Instant::now() + STOP_PENDING_WAIT;
    loop {
        let current = fleet
            .container(&request.id)
            .await?
            .unwrap_or_else(|| request.clone());
        match current.state {
            ContainerState::Pending if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            ContainerState::Pending
            | ContainerState::Exited
            | ContainerState::Failed
            | ContainerState::Lost => return Ok(current),
            ContainerState::Scheduled | ContainerState::Running => {
                send_stop(fleet, &current.worker_id, &current.id).await?;
                return Ok(current);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::qualify_image;

    #[test]
    fn short_image_names_live_in_the_configured_registry() {
        let registry = "registry.example.com/levers9";
        assert_eq!(
            qualify_image("busybox@sha256:ab", registry).unwrap(),
            "registry.example.com/levers9/busybox@sha256:ab"
        );
        assert_eq!(
            qualify_image("team/app:1", registry).unwrap(),
            "registry.example.com/levers9/team/app:1"
        );
        for full in [
            "127.0.0.1:5000/app:1",
            "ghcr.io/team/app:1",
            "localhost/app:1",
        ] {
            assert_eq!(qualify_image(full, registry).unwrap(), full);
        }
        assert!(qualify_image("app:1", "").is_err());
        assert!(qualify_image("", registry).is_err());
    }
}
