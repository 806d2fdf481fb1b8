//! FunctionService: code objects, stubs and tasks of the caller's workspace.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use levers9_api::v1::{
    function_service_server::FunctionService, run_event, run_request, CallRequest,
    CancelTaskRequest, CancelTaskResponse, DeployRequest, DeployResponse, GetDeploymentRequest,
    GetDeploymentResponse, GetObjectRequest, GetObjectResponse, GetOrCreateStubRequest,
    GetOrCreateStubResponse, GetStubRequest, GetStubResponse, GetTaskRequest, GetTaskResponse,
    HeadObjectRequest, HeadObjectResponse, ItemsReceived, ListDeploymentsRequest,
    ListDeploymentsResponse, ListSchedulesRequest, ListSchedulesResponse, ListStubsRequest,
    ListStubsResponse, ListTasksRequest, ListTasksResponse, PutObjectRequest, PutObjectResponse,
    RunEvent, RunInput, RunRequest, RunStart, SpawnTaskRequest, SpawnTaskResponse, TaskOutcome,
    WaitTaskRequest,
};
use levers9_state::keys;
use levers9_store::{FinalState, TaskRecord, TaskState, TokenType};
use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::convert;
use super::deployment;
use super::run_driver::{check_call_kind, event, EventStream, RunDriver};
use super::schedule;
use super::stub;
use crate::auth::{self as auth, authorized, Caller, USERS};
use crate::error::ApiError;
use crate::functions::objects::digest_hex;
use crate::functions::submit::{self, RowBy};
use crate::functions::{DispatchEvent, Ticket};
use crate::{wire_states, Shared};

const INSTALL_WIDE: &[TokenType] = &[TokenType::Admin, TokenType::Worker];
/// How often a task's follower reads its row, for an end not told on the
/// task's own channel (that of a task a Run stream started).
const ROW_LOOK_EVERY: Duration = Duration::from_secs(1);

/// The FunctionService implementation.
pub struct FunctionApi {
    pub(super) shared: Arc<Shared>,
}

impl FunctionApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// Turns `inbound`'s inputs into tasks of the stub `start` names and
    /// streams their events back until each has a result.
    async fn drive(
        &self,
        caller: &Caller,
        start: RunStart,
        inbound: BoxStream<'static, Result<RunRequest, Status>>,
    ) -> Result<Response<EventStream>, Status> {
        let stub = stub::owned(&self.shared, caller, &start.stub_id).await?;
        check_call_kind(&stub, start.generator)?;
        let (reply, events) = self.shared.tasks.open_reply().await?;
        let stream = RunDriver::spawn(
            self.shared.clone(),
            stub,
            reply,
            &start,
            inbound,
            events.boxed(),
        );
        Ok(Response::new(stream))
    }

    async fn task(&self, caller: &Caller, task_id: &str) -> Result<TaskRecord, ApiError> {
        self.shared
            .functions
            .get_task(&caller.workspace.id, task_id)
            .await?
            .ok_or_else(|| {
                ApiError::NotFound(format!(
                    "no task {task_id:?} in this workspace: see levers9 task list"
                ))
            })
    }

    /// Runs one input (`payload`) of the workspace's stub `stub_id` as a
    /// `Call` does, for a caller that decided itself who may call it (the
    /// endpoint gateway): its events, ending with the result. Items it
    /// streams (an ASGI app's streamed answer) are acknowledged as
    /// `receipts` says, as a generator's caller does. Dropping the stream
    /// cancels the task.
    pub(crate) async fn call_stub(
        &self,
        workspace_id: &str,
        stub_id: &str,
        payload: Vec<u8>,
        receipts: BoxStream<'static, ItemsReceived>,
    ) -> Result<EventStream, ApiError> {
        let stub = match self.shared.stubs.get(workspace_id, stub_id) {
            Some(stub) => stub,
            None => {
                let stub = self
                    .shared
                    .functions
                    .get_stub(workspace_id, stub_id)
                    .await?
                    .ok_or_else(|| ApiError::NotFound(format!("no stub {stub_id:?}")))?;
                self.shared.stubs.put(&stub);
                stub
            }
        };
        // As a generator's Run: one input, then the caller's receipts.
        let start = RunStart {
            stub_id: stub.id.clone(),
            generator: true,
            ..RunStart::default()
        };
        let inbound = futures::stream::iter([Ok(RunRequest {
            kind: Some(run_request::Kind::Input(RunInput { index: 0, payload })),
        })])
        .chain(receipts.map(|received| {
            Ok(RunRequest {
                kind: Some(run_request::Kind::Received(received)),
            })
        }));
        let (reply, events) = self.shared.tasks.open_reply().await?;
        Ok(RunDriver::spawn(
            self.shared.clone(),
            stub,
            reply,
            &start,
            inbound.boxed(),
            events.boxed(),
        ))
    }
}

#[tonic::async_trait]
impl FunctionService for FunctionApi {
    async fn head_object(
        &self,
        request: Request<HeadObjectRequest>,
    ) -> Result<Response<HeadObjectResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        let digest = &request.get_ref().digest;
        digest_hex(digest)?;
        let exists = self
            .shared
            .functions
            .has_object(&caller.workspace.id, digest)
            .await
            .map_err(ApiError::from)?
            && self.shared.objects.exists(digest).await?;
        Ok(Response::new(HeadObjectResponse { exists }))
    }

    async fn put_object(
        &self,
        request: Request<PutObjectRequest>,
    ) -> Result<Response<PutObjectResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        let body = request.into_inner();
        self.shared.objects.put(&body.digest, &body.data).await?;
        let size = i64::try_from(body.data.len()).unwrap_or(i64::MAX);
        self.shared
            .functions
            .put_object(&caller.workspace.id, &body.digest, size, chrono::Utc::now())
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(PutObjectResponse {}))
    }

    async fn get_object(
        &self,
        request: Request<GetObjectRequest>,
    ) -> Result<Response<GetObjectResponse>, Status> {
        let caller = auth::caller(&request)?;
        let body = request.into_inner();
        // Workers and admins act for the whole install: they read the
        // objects of the workspace whose container needs them.
        let workspace_id =
            if INSTALL_WIDE.contains(&caller.token_type) && !body.workspace_id.is_empty() {
                body.workspace_id
            } else {
                caller.require(
                    &[TokenType::Admin, TokenType::Workspace, TokenType::Worker],
                    "read objects",
                )?;
                caller.workspace.id.clone()
            };
        let missing = || {
            ApiError::NotFound(format!(
                "no object {} in workspace {workspace_id}",
                body.digest
            ))
        };
        if !self
            .shared
            .functions
            .has_object(&workspace_id, &body.digest)
            .await
            .map_err(ApiError::from)?
        {
            return Err(missing().into());
        }
        let data = self.shared.objects.get(&body.digest).await?;
        Ok(Response::new(GetObjectResponse { data }))
    }

    async fn get_or_create_stub(
        &self,
        request: Request<GetOrCreateStubRequest>,
    ) -> Result<Response<GetOrCreateStubResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        Ok(Response::new(
            stub::get_or_create(&self.shared, &caller, request.into_inner()).await?,
        ))
    }

    async fn list_stubs(
        &self,
        request: Request<ListStubsRequest>,
    ) -> Result<Response<ListStubsResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        let limit = match request.get_ref().limit {
            0 => 100,
            n => n.min(1000),
        };
        let stubs = self
            .shared
            .functions
            .list_stubs(&caller.workspace.id, limit)
            .await
            .map_err(ApiError::from)?;
        let stubs = stubs.iter().map(convert::stub).collect::<Result<_, _>>()?;
        Ok(Response::new(ListStubsResponse { stubs }))
    }

    async fn get_stub(
        &self,
        request: Request<GetStubRequest>,
    ) -> Result<Response<GetStubResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        let stub = stub::owned(&self.shared, &caller, &request.get_ref().stub_id).await?;
        Ok(Response::new(GetStubResponse {
            stub: Some(convert::stub(&stub)?),
        }))
    }

    async fn deploy(
        &self,
        request: Request<DeployRequest>,
    ) -> Result<Response<DeployResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        Ok(Response::new(
            deployment::deploy(&self.shared, &caller, request.into_inner()).await?,
        ))
    }

    async fn list_deployments(
        &self,
        request: Request<ListDeploymentsRequest>,
    ) -> Result<Response<ListDeploymentsResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        Ok(Response::new(
            deployment::list(&self.shared, &caller, request.into_inner()).await?,
        ))
    }

    async fn get_deployment(
        &self,
        request: Request<GetDeploymentRequest>,
    ) -> Result<Response<GetDeploymentResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        Ok(Response::new(
            deployment::get(&self.shared, &caller, request.into_inner()).await?,
        ))
    }

    async fn list_schedules(
        &self,
        request: Request<ListSchedulesRequest>,
    ) -> Result<Response<ListSchedulesResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        Ok(Response::new(
            schedule::list(&self.shared, &caller, request.into_inner()).await?,
        ))
    }

    type RunStream = EventStream;

    async fn run(
        &self,
        request: Request<Streaming<RunRequest>>,
    ) -> Result<Response<Self::RunStream>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        let mut inbound = request.into_inner();
        let first = inbound.message().await?;
        let Some(RunRequest {
            kind: Some(run_request::Kind::Start(start)),
        }) = first
        else {
            return Err(ApiError::InvalidArgument(
                "the first message of a Run stream must be a start naming the stub".into(),
            )
            .into());
        };
        self.drive(&caller, start, inbound.boxed()).await
    }

    type CallStream = EventStream;

    async fn call(
        &self,
        request: Request<CallRequest>,
    ) -> Result<Response<Self::CallStream>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        let CallRequest {
            start: Some(start),
            input: Some(input),
        } = request.into_inner()
        else {
            return Err(ApiError::InvalidArgument(
                "a Call needs both a start naming the stub and an input".into(),
            )
            .into());
        };
        let inbound = futures::stream::iter([Ok(RunRequest {
            kind: Some(run_request::Kind::Input(input)),
        })]);
        self.drive(&caller, start, inbound.boxed()).await
    }

    async fn spawn_task(
        &self,
        request: Request<SpawnTaskRequest>,
    ) -> Result<Response<SpawnTaskResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        let body = request.into_inner();
        let stub = stub::owned(&self.shared, &caller, &body.stub_id).await?;
        check_call_kind(&stub, false)?;
        let task_id = submit::new_task_id();
        let ticket = Ticket {
            task_id: task_id.clone(),
            reply: keys::task_reply(&task_id),
            index: 0,
        };
        submit::submit(
            self.shared.functions.as_ref(),
            &self.shared.tasks,
            &stub,
            vec![(ticket, body.payload)],
            RowBy::Submit,
        )
        .await?;
        Ok(Response::new(SpawnTaskResponse { task_id }))
    }

    type WaitTaskStream = EventStream;

    async fn wait_task(
        &self,
        request: Request<WaitTaskRequest>,
    ) -> Result<Response<Self::WaitTaskStream>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        let task_id = request.into_inner().task_id;
        self.task(&caller, &task_id).await?;
        // Follow first, then look: an end in between is not missed.
        let mut events = self
            .shared
            .tasks
            .follow(&keys::task_reply(&task_id))
            .await?;
        let task = self.task(&caller, &task_id).await?;
        let (tx, rx) = mpsc::channel(64);
        let api = FunctionApi {
            shared: self.shared.clone(),
        };
        tokio::spawn(async move {
            let mut task = task;
            // Only a spawned task's end is told on its own channel; the end
            // of one that a Run stream follows shows in its row.
            let mut look_again = tokio::time::interval(ROW_LOOK_EVERY);
            look_again.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            look_again.reset();
            loop {
                if let TaskState::Ended(ended) = task.state {
                    let end = TaskOutcome {
                        task_id: task.id.clone(),
                        state: wire_states::final_state(ended).into(),
                        message: task.message.clone(),
                        ..TaskOutcome::default()
                    };
                    let outcome = submit::final_outcome(&api.shared.tasks, &end).await;
                    let _ = tx
                        .send(outcome.map_err(Status::from).map(|o| RunEvent {
                            kind: Some(run_event::Kind::Result(o)),
                        }))
                        .await;
                    return;
                }
                let bytes = tokio::select! {
                    bytes = events.next() => bytes,
                    _ = look_again.tick() => {
                        match api.task(&caller, &task.id).await {
                            Ok(row) => task = row,
                            Err(error) => {
                                let _ = tx.send(Err(error.into())).await;
                                return;
                            }
                        }
                        continue;
                    }
                    () = tx.closed() => return,
                };
                let Some(Ok(RunEvent { kind: Some(kind) })) =
                    bytes.map(|b| RunEvent::decode(b.as_slice()))
                else {
                    return;
                };
                match kind {
                    // A complete result comes with its payload from the
                    // worker's stream, maybe before it is stored.
                    run_event::Kind::Result(notice)
                        if notice.state() == levers9_api::v1::FinalTaskState::Complete
                            && !notice.payload.is_empty() =>
                    {
                        let _ = tx.send(event(run_event::Kind::Result(notice))).await;
                        return;
                    }
                    // Notices carry final states only; anything else waits
                    // for the row.
                    run_event::Kind::Result(notice) => {
                        if let Some(end) = wire_states::final_state_from_wire(notice.state()) {
                            task.state = end.into();
                            task.message = notice.message;
                        }
                    }
                    other => {
                        if tx.send(event(other)).await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn list_tasks(
        &self,
        request: Request<ListTasksRequest>,
    ) -> Result<Response<ListTasksResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        let limit = match request.get_ref().limit {
            0 => 50,
            n => n.min(1000),
        };
        let tasks = self
            .shared
            .functions
            .list_tasks(&caller.workspace.id, limit)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(ListTasksResponse {
            tasks: tasks.iter().map(convert::task).collect(),
        }))
    }

    async fn get_task(
        &self,
        request: Request<GetTaskRequest>,
    ) -> Result<Response<GetTaskResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        let task = self.task(&caller, &request.get_ref().task_id).await?;
        let attempts = self
            .shared
            .functions
            .task_attempts(&task.id)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(GetTaskResponse {
            task: Some(convert::task(&task)),
            attempts: attempts.iter().map(convert::attempt).collect(),
        }))
    }

    async fn cancel_task(
        &self,
        request: Request<CancelTaskRequest>,
    ) -> Result<Response<CancelTaskResponse>, Status> {
        let caller = authorized(&request, USERS, "call functions")?;
        let task = self.task(&caller, &request.get_ref().task_id).await?;
        if !task.state.is_final() {
            self.shared
                .tasks
                .tell(&DispatchEvent::Cancel {
                    task_id: task.id.clone(),
                })
                .await
                .map_err(ApiError::from)?;
            self.shared
                .functions
                .finish_task(
                    &task.id,
                    FinalState::Cancelled,
                    "cancelled by the caller",
                    chrono::Utc::now(),
                )
                .await
                .map_err(ApiError::from)?;
        }
        let task = self.task(&caller, &task.id).await?;
        Ok(Response::new(CancelTaskResponse {
            task: Some(convert::task(&task)),
        }))
    }
}
