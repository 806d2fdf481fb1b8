//! The worker's side of its stream to the controlplane: connect, register,
//! heartbeat, acknowledge and carry out requests, report; reconnect with
//! backoff when the stream breaks.

use std::collections::VecDeque;
use std::time::Duration;

use levers9_api::v1::{
    controlplane_message, worker_message, worker_service_client::WorkerServiceClient, Ack,
    Heartbeat, Register, WorkerMessage,
};
use levers9_api::Bearer;
use levers9_ids::ContainerId;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use crate::security::SecurityPolicy;
use crate::settings;
use crate::storage_settings;
use crate::supervisor::Supervisor;
use crate::WorkerOptions;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long a stopped container gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// The largest message taken from the controlplane: a task's input, which
/// the container server carries in one frame body, plus room for the rest
/// of the message (gRPC's default of 4 MiB would end the stream on the
/// first large input).
const MAX_INBOUND_MESSAGE_BYTES: usize =
    crate::container_server::MAX_BODY_BYTES as usize + (1 << 20);

/// Why a session ended.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    #[error("cannot connect: {}", levers9_api::error_chain(.0))]
    Connect(#[from] tonic::transport::Error),
    #[error(transparent)]
    Dial(#[from] levers9_api::dial::DialError),
    #[error("{}", .0.message())]
    Status(#[from] tonic::Status),
    #[error("the controlplane closed the stream before answering Register")]
    NoRegistered,
    #[error("the token is not valid ASCII")]
    Token,
}

/// A WorkerService client on a new connection to the controlplane.
pub(crate) async fn connect(
    options: &WorkerOptions,
) -> Result<WorkerServiceClient<InterceptedService<Channel, Bearer>>, SessionError> {
    let channel = options
        .controlplane
        .endpoint()?
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(10))
        .keep_alive_timeout(Duration::from_secs(10))
        .connect()
        .await?;
    let bearer = Bearer::token(&options.token).map_err(|_| SessionError::Token)?;
    Ok(WorkerServiceClient::with_interceptor(channel, bearer))
}

fn message(kind: worker_message::Kind) -> WorkerMessage {
    WorkerMessage { kind: Some(kind) }
}

/// Keeps a session up until `stopped`, reconnecting with capped exponential
/// backoff. Reports that could not be sent are carried to the next session.
pub async fn run(
    options: WorkerOptions,
    supervisor: Supervisor,
    mut events: mpsc::Receiver<WorkerMessage>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut carry: VecDeque<WorkerMessage> = VecDeque::new();
    let mut backoff = FIRST_BACKOFF;
    while !*stopped.borrow() {
        let ended = session(&options, &supervisor, &mut events, &mut carry, &mut stopped).await;
        // Their callers were told the exec failed with the stream.
        supervisor.execs().end_all();
        match ended {
            Ok(()) => backoff = FIRST_BACKOFF,
            Err(SessionError::Status(status)) if status.code() == tonic::Code::Unauthenticated => {
                tracing::error!(error = %status.message(), "the controlplane refused the worker token");
            }
            Err(error) => {
                tracing::warn!(%error, retry_in_ms = backoff.as_millis() as u64, "session with the controlplane ended")
            }
        }
        tokio::select! {
            _ = stopped.changed() => {}
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

async fn session(
    options: &WorkerOptions,
    supervisor: &Supervisor,
    events: &mut mpsc::Receiver<WorkerMessage>,
    carry: &mut VecDeque<WorkerMessage>,
    stopped: &mut watch::Receiver<bool>,
) -> Result<(), SessionError> {
    let mut client = connect(options)
        .await?
        .max_decoding_message_size(MAX_INBOUND_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_INBOUND_MESSAGE_BYTES);
    let (outbound, outbound_rx) = mpsc::channel(256);
    let register = Register {
        worker_id: options.worker_id.clone(),
        pool: options.pool.clone(),
        hostname: options.hostname.clone(),
        capacity: Some(options.capacity.to_wire()),
        runtime: options.runtime.as_str().to_owned(),
        running: supervisor.running(),
    };
    // The channel is new and has room.
    let _ = outbound
        .send(message(worker_message::Kind::Register(register)))
        .await;
    let mut inbound = client
        .attach(ReceiverStream::new(outbound_rx))
        .await?
        .into_inner();
    let Some(first) = inbound.message().await? else {
        return Err(SessionError::NoRegistered);
    };
    let interval = match first.kind {
        Some(controlplane_message::Kind::Registered(r)) => {
            take_settings(options, supervisor, &r.worker_settings_json);
            supervisor.set_spares(match options.config.spares {
                0 => r.spares,
                own => own,
            });
            // Before the first request of the session: none of its
            // containers may bind volumes the controlplane's replace.
            take_storage(options, supervisor, &r.worker_storage_json).await;
            Duration::from_millis(u64::from(r.heartbeat_interval_ms.max(100)))
        }
        _ => return Err(SessionError::NoRegistered),
    };
    tracing::info!(worker_id = %options.worker_id, pool = %options.pool, controlplane = %options.controlplane.address, "registered with the controlplane");
    while let Some(pending) = carry.pop_front() {
        if outbound.send(pending.clone()).await.is_err() {
            carry.push_front(pending);
            return Ok(());
        }
    }
    let mut heartbeat = tokio::time::interval(interval);
    loop {
        tokio::select! {
            _ = stopped.changed() => return Ok(()),
            _ = heartbeat.tick() => {
                if outbound.send(message(worker_message::Kind::Heartbeat(Heartbeat {}))).await.is_err() {
                    return Ok(());
                }
            }
            report = events.recv() => {
                let Some(report) = report else { return Ok(()) };
                if let Err(failed) = outbound.send(report).await {
                    carry.push_back(failed.0);
                    return Ok(());
                }
            }
            incoming = inbound.message() => {
                let Some(request) = incoming? else { return Ok(()) };
                match request.kind {
                    Some(controlplane_message::Kind::Run(run)) => {
                        let ack = Ack { request_id: run.request_id.clone() };
                        let _ = outbound.send(message(worker_message::Kind::Ack(ack))).await;
                        tracing::info!(container_id = %run.container_id, image = %run.image, "run request");
                        supervisor.run(run);
                    }
                    Some(controlplane_message::Kind::Stop(stop)) => {
                        let ack = Ack { request_id: stop.request_id.clone() };
                        let _ = outbound.send(message(worker_message::Kind::Ack(ack))).await;
                        // A container whose id is not valid cannot be here.
                        match ContainerId::parse(stop.container_id) {
                            Ok(id) => supervisor.stop(id, STOP_GRACE),
                            Err(error) => tracing::warn!(%error, "cannot stop a container"),
                        }
                    }
                    Some(controlplane_message::Kind::TaskInput(input)) => {
                        supervisor.task_input(input);
                    }
                    Some(controlplane_message::Kind::CancelInput(cancel)) => {
                        supervisor.cancel_input(cancel);
                    }
                    Some(controlplane_message::Kind::ExecInput(input)) => {
                        supervisor.execs().input(input);
                    }
                    Some(controlplane_message::Kind::ItemsAck(ack)) => {
                        supervisor.items_ack(ack);
                    }
                    Some(controlplane_message::Kind::Registered(_)) | None => {}
                }
            }
        }
    }
}

/// Hardens the containers started from now on with the controlplane's
/// settings as well as the worker's own (see [`crate::settings`]); the
/// worker's own alone when the controlplane sends none or bad ones.
fn take_settings(options: &WorkerOptions, supervisor: &Supervisor, json: &str) {
    if json.is_empty() {
        return;
    }
    let own = SecurityPolicy::resolve(&options.config, &options.pool, options.pool_origin);
    match settings::apply_controlplane_settings(&own, json, options.pool_origin) {
        Ok(policy) => {
            if policy != *supervisor.security() {
                tracing::info!(pool = %policy.pool, profile = ?policy.profile, server_auth = ?policy.server_auth, volume_mounts = ?policy.mounts, "container hardening from the controlplane's settings");
            }
            supervisor.set_security(policy);
        }
        Err(error) => {
            tracing::warn!(%error, "keeping this worker's own container hardening");
        }
    }
}

/// Mounts the controlplane's volume file system for the containers started
/// from now on, unless this worker's own config says where volumes live
/// (see [`crate::storage_settings`]). The settings hold secrets: only that
/// they came, and where the volumes are mounted, is logged.
async fn take_storage(options: &WorkerOptions, supervisor: &Supervisor, json: &str) {
    match storage_settings::storage_to_adopt(&options.storage, json) {
        Ok(Some(juicefs)) => {
            supervisor
                .adopt_volume_storage(juicefs, &options.state_dir)
                .await
        }
        Ok(None) => {
            if !json.is_empty() && options.storage.names_volume_location() {
                tracing::debug!("keeping this worker's own volume storage over the controlplane's");
            }
        }
        Err(error) => {
            tracing::warn!(%error, "keeping this worker's own volumes");
        }
    }
}
