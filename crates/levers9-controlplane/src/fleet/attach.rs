//! One worker's stream, on the replica it dialled: registration, heartbeats,
//! container events and logs in; run and stop requests out. Its function
//! traffic (inputs out; runner ready, output, items, results in) goes to a
//! [`TaskTraffic`] (`functions::worker_stream`).
//!
//! Requests for a worker may be placed by any replica: they go to the
//! worker's inbox queue in the hot state, and the replica holding its stream
//! pumps them out. A run request not acknowledged when the stream ends is
//! put back in the backlog, its capacity released, so it runs elsewhere.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use levers9_api::v1::{
    controlplane_message, worker_message, ContainerEvent, ControlplaneMessage, LogChunk, Register,
    Registered, WorkerMessage,
};
use levers9_state::keys;
use levers9_sync::Lock;
use prost::Message;
use tokio::sync::{mpsc, oneshot};
use tonic::{Status, Streaming};

use super::inbox::Inbox;
use super::records::{ContainerState, WorkerRecord};
use super::{Fleet, FleetError};
use crate::auth::Caller;
use crate::machines::WorkerBinding;
use crate::scheduler::{self, Scheduling};
use crate::sealing::SecretOpener;
use crate::wire_states;
use levers9_store::TokenType;

pub(crate) mod execs;
mod handoff;
mod traffic;

pub use traffic::TaskTraffic;

/// How long a new stream may take to send its Register.
const REGISTER_TIMEOUT: Duration = Duration::from_secs(10);

/// A map behind a lock whose every critical section is a single insert,
/// remove or drain.
type Locked<V> = Lock<HashMap<String, V>>;

/// Run requests sent and not yet acknowledged: request id → container id.
type Unacked = Locked<String>;

/// What the inbound and outbound halves of one stream share.
struct StreamState<T> {
    unacked: Unacked,
    tasks: T,
    /// Execs started on this stream and not ended.
    execs: Locked<()>,
}

/// Reads the Register that must open the stream and answers it; returns the
/// worker and the channel the rest of the session writes to.
pub async fn open(
    fleet: &Fleet,
    caller: &Caller,
    binding: &WorkerBinding,
    inbound: &mut Streaming<WorkerMessage>,
) -> Result<
    (
        WorkerRecord,
        mpsc::Receiver<Result<ControlplaneMessage, Status>>,
        mpsc::Sender<Result<ControlplaneMessage, Status>>,
    ),
    FleetError,
> {
    let first = tokio::time::timeout(REGISTER_TIMEOUT, inbound.message())
        .await
        .map_err(|_| FleetError::NoRegister)?
        .map_err(|s| FleetError::StreamBroke(s.message().to_owned()))?;
    let Some(WorkerMessage {
        kind: Some(worker_message::Kind::Register(register)),
    }) = first
    else {
        return Err(FleetError::NotRegisterFirst);
    };
    // A machine's credential registers only its own worker, in its pool.
    binding.allow(&register.worker_id, Some(&register.pool))?;
    let worker_settings_json = fleet.worker_settings_json(&register.pool);
    // Only a worker or admin token opens this stream (services/worker.rs),
    // and a machine's credential only for its own worker, as checked
    // above: the volumes' keys go to this install's workers alone.
    let worker_storage_json = fleet.worker_storage_json();
    let worker = register_worker(fleet, caller, register).await?;
    let (tx, rx) = mpsc::channel(64);
    let interval = fleet.heartbeat_ttl() / 4;
    let registered = ControlplaneMessage {
        kind: Some(controlplane_message::Kind::Registered(Registered {
            heartbeat_interval_ms: u32::try_from(interval.as_millis()).unwrap_or(u32::MAX),
            worker_settings_json,
            worker_storage_json,
            spares: fleet.worker_spares(),
        })),
    };
    // The channel is fresh and has room: this cannot fail.
    let _ = tx.send(Ok(registered)).await;
    Ok((worker, rx, tx))
}

async fn register_worker(
    fleet: &Fleet,
    caller: &Caller,
    register: Register,
) -> Result<WorkerRecord, FleetError> {
    if register.worker_id.is_empty() || register.pool.is_empty() {
        return Err(FleetError::IncompleteRegister);
    }
    // Taking over a live worker's id would hand its drain to another token.
    if let Some(existing) = fleet.worker(&register.worker_id).await? {
        if !existing.token_id.is_empty()
            && existing.token_id != caller.token_id
            && caller.token_type != TokenType::Admin
            && fleet.is_alive(&existing.id).await?
        {
            return Err(FleetError::WorkerIdTaken(existing.id));
        }
    }
    if let Some(pool) = fleet.pool_config(&register.pool) {
        let wanted = pool.runtime.as_str();
        if register.runtime != wanted {
            return Err(FleetError::WrongRuntime {
                pool: register.pool,
                wanted: wanted.to_owned(),
                runtime: register.runtime,
            });
        }
    }
    let capacity = register.capacity.unwrap_or_default();
    let worker = WorkerRecord {
        id: register.worker_id,
        pool: register.pool,
        hostname: register.hostname,
        runtime: register.runtime,
        cpu_millicores: capacity.cpu_millicores,
        memory_mib: capacity.memory_mib,
        gpus: capacity
            .gpus
            .into_iter()
            .map(|g| (g.gpu_type, g.device_ids))
            .collect(),
        last_heartbeat_at: Utc::now(),
        token_id: caller.token_id.clone(),
    };
    // Free capacity is the total less what the containers on record for this
    // worker hold, whether they run already or wait in its inbox: a worker
    // reconnecting after a controlplane restart keeps its accounting.
    let mut free: Vec<(String, i64)> = vec![
        (
            super::CPU.to_owned(),
            i64::try_from(worker.cpu_millicores).unwrap_or(i64::MAX),
        ),
        (
            super::MEMORY.to_owned(),
            i64::try_from(worker.memory_mib).unwrap_or(i64::MAX),
        ),
    ];
    for (gpu_type, devices) in &worker.gpus {
        let count = i64::try_from(devices.len()).unwrap_or(i64::MAX);
        free.push((super::gpu_counter(gpu_type), count));
    }
    for id in fleet.worker_containers(&worker.id).await? {
        if let Some(c) = fleet.container(&id).await? {
            if !c.state.is_final() {
                for (counter, held) in c.amounts() {
                    if let Some((_, left)) = free.iter_mut().find(|(n, _)| *n == counter) {
                        *left -= held;
                    }
                }
            }
        }
    }
    fleet.put_worker(&worker).await?;
    fleet.set_free_capacity(&worker.id, &free).await?;
    fleet.touch_alive(&worker.id).await?;
    let reported: Vec<&str> = register
        .running
        .iter()
        .map(|r| r.container_id.as_str())
        .collect();
    tracing::info!(worker_id = %worker.id, pool = %worker.pool, hostname = %worker.hostname, cpu_millicores = worker.cpu_millicores, memory_mib = worker.memory_mib, running = ?reported, "worker registered");
    Ok(worker)
}

/// Serves a registered worker's stream until it ends; the run requests it
/// never acknowledged go back to `scheduling` then. `secrets` opens the
/// secrets of run requests as they go out; `tasks` takes the function
/// traffic.
pub async fn serve<T: TaskTraffic>(
    scheduling: Scheduling,
    worker: WorkerRecord,
    mut inbound: Streaming<WorkerMessage>,
    outbound: mpsc::Sender<Result<ControlplaneMessage, Status>>,
    secrets: SecretOpener,
    tasks: T,
) {
    let fleet = scheduling.fleet();
    let shared = Arc::new(StreamState {
        unacked: Unacked::default(),
        tasks,
        execs: Locked::default(),
    });
    let (stop_pump, stop) = oneshot::channel();
    let pump = tokio::spawn(pump_inbox(
        fleet.clone(),
        secrets,
        worker.id.clone(),
        outbound.clone(),
        shared.clone(),
        stop,
    ));
    loop {
        let message = match inbound.message().await {
            Ok(Some(message)) => message,
            Ok(None) => break,
            Err(status) => {
                tracing::info!(worker_id = %worker.id, error = %status.message(), "worker stream broke");
                break;
            }
        };
        if let Err(error) = handle(fleet, &worker, &shared, message).await {
            tracing::warn!(worker_id = %worker.id, %error, "cannot handle a worker message");
        }
    }
    drop(outbound);
    let _ = stop_pump.send(());
    let _ = pump.await;
    execs::worker_gone(fleet, &worker.id, &shared).await;
    requeue_unacked(&scheduling, &worker, &shared.unacked).await;
    tracing::info!(worker_id = %worker.id, "worker stream closed");
}

async fn handle<T: TaskTraffic>(
    fleet: &Fleet,
    worker: &WorkerRecord,
    stream: &StreamState<T>,
    message: WorkerMessage,
) -> Result<(), FleetError> {
    match message.kind {
        Some(worker_message::Kind::Heartbeat(_)) => {
            fleet.touch_alive(&worker.id).await?;
            let mut record = worker.clone();
            record.last_heartbeat_at = Utc::now();
            fleet.update_worker(&record).await?;
        }
        Some(worker_message::Kind::Ack(ack)) => {
            stream.unacked.lock().remove(&ack.request_id);
        }
        Some(worker_message::Kind::RunnerReady(ready)) => {
            report(worker, stream.tasks.runner_ready(ready.container_id).await)
        }
        Some(worker_message::Kind::TaskOutput(output)) => {
            report(worker, stream.tasks.output(output).await)
        }
        Some(worker_message::Kind::TaskResult(result)) => {
            report(worker, stream.tasks.result(result).await)
        }
        Some(worker_message::Kind::ExecOutput(output)) => {
            execs::forward(fleet, stream, output).await?
        }
        Some(worker_message::Kind::TaskItem(item)) => {
            report(worker, stream.tasks.item(&worker.id, item).await)
        }
        Some(worker_message::Kind::Event(event)) => container_event(fleet, worker, event).await?,
        Some(worker_message::Kind::Log(chunk)) => {
            fleet
                .append_log(&chunk.container_id, &chunk.encode_to_vec())
                .await?;
        }
        Some(worker_message::Kind::Register(_)) => return Err(FleetError::RegisterAgain),
        None => {}
    }
    Ok(())
}

/// Logs a function message the worker's stream could not handle, as
/// [`serve`] logs the stream's own.
fn report<E: std::fmt::Display>(worker: &WorkerRecord, result: Result<(), E>) {
    if let Err(error) = result {
        tracing::warn!(worker_id = %worker.id, %error, "cannot handle a worker message");
    }
}

async fn container_event(
    fleet: &Fleet,
    worker: &WorkerRecord,
    event: ContainerEvent,
) -> Result<(), FleetError> {
    // An event that names no state (unspecified, or a number of a newer
    // worker's) cannot move the container anywhere; the next event, or the
    // worker's loss, will.
    let Some(state) = wire_states::container_event_state(event.state()) else {
        tracing::warn!(worker_id = %worker.id, container_id = %event.container_id, state = event.state, "container event in a state this controlplane does not know; ignored");
        return Ok(());
    };
    let Some(mut container) = fleet.container(&event.container_id).await? else {
        tracing::warn!(worker_id = %worker.id, container_id = %event.container_id, "event for an unknown container");
        return Ok(());
    };
    if container.worker_id != worker.id || container.state.is_final() {
        return Ok(());
    }
    container.state = state;
    container.exit_code = event.exit_code;
    container.oom_killed = event.oom_killed;
    container.message = event.message;
    fleet.put_container(&container).await?;
    if container.state.is_final() {
        fleet.release(&worker.id, &container).await?;
        fleet.publish_end(&container.id).await?;
        tracing::info!(container_id = %container.id, state = %container.state, exit_code = container.exit_code, oom_killed = container.oom_killed, "container ended");
    }
    Ok(())
}

/// Moves requests from the worker's inbox to its stream until `stop`.
async fn pump_inbox<T: TaskTraffic>(
    fleet: Fleet,
    secrets: SecretOpener,
    worker_id: String,
    outbound: mpsc::Sender<Result<ControlplaneMessage, Status>>,
    stream: Arc<StreamState<T>>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut inbox = Inbox::open(&fleet, &worker_id);
    loop {
        let mut message = tokio::select! {
            message = inbox.next() => match message {
                Some(message) => message,
                None => break,
            },
            _ = &mut stop => break,
        };
        // What goes back to the inbox if the stream is gone: never with the
        // secrets and payload attached below for this stream alone.
        let original = message.clone();
        if let Some(controlplane_message::Kind::Run(run)) = &mut message.kind {
            if !handoff::open_secrets(&fleet, &secrets, &worker_id, run).await
                || !handoff::open_volume_storage(&fleet, &secrets, &worker_id, run).await
                || !handoff::open_registry_auth(&fleet, &worker_id, run).await
            {
                continue;
            }
            stream
                .unacked
                .lock()
                .insert(run.request_id.clone(), run.container_id.clone());
        }
        if let Some(controlplane_message::Kind::TaskInput(input)) = &mut message.kind {
            if !stream.tasks.attach_input(input).await {
                continue;
            }
        }
        execs::note_sent(&stream, &message);
        if outbound.send(Ok(message)).await.is_err() {
            // The stream is gone: give the request back for the next stream.
            inbox.give_back(&original).await;
            break;
        }
    }
    inbox.close().await;
}

async fn requeue_unacked(scheduling: &Scheduling, worker: &WorkerRecord, unacked: &Unacked) {
    let fleet = scheduling.fleet();
    let pending: Vec<String> = unacked.lock().drain().map(|(_, c)| c).collect();
    for container_id in pending {
        let result = async {
            let Some(mut container) = fleet.container(&container_id).await? else {
                return Ok::<(), FleetError>(());
            };
            if container.state != ContainerState::Scheduled || container.worker_id != worker.id {
                return Ok(());
            }
            fleet.release(&worker.id, &container).await?;
            fleet
                .state
                .set_remove(&keys::worker_containers(&worker.id), &container.id)
                .await?;
            container.state = ContainerState::Pending;
            container.worker_id.clear();
            scheduler::enqueue(scheduling, &container).await?;
            Ok(())
        }
        .await;
        match result {
            Ok(()) => {
                tracing::info!(%container_id, worker_id = %worker.id, "unacknowledged run request requeued")
            }
            Err(error) => {
                tracing::error!(%error, %container_id, "cannot requeue an unacknowledged run request")
            }
        }
    }
}

/// A log entry as stored: the chunk itself, encoded.
pub fn decode_log(bytes: &[u8]) -> Option<LogChunk> {
    LogChunk::decode(bytes).ok()
}
