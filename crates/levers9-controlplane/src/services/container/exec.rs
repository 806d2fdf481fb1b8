//! ContainerService.ExecContainer: a command in a running container of the
//! caller's workspace, relayed to and from the container's worker.
//!
//! The start and stdin go to the worker's inbox as [`ExecInput`]s (any
//! replica may hold the worker's stream); the worker's [`ExecOutput`]s come
//! back on the hot state's channel `exec:<exec id>`, which the replica
//! holding the stream publishes to (see `fleet/attach/execs.rs`). Both
//! directions are bounded by windows the worker keeps too: at most
//! [`STDIN_WINDOW`] stdin chunks the command has not taken are sent, and
//! output is counted as taken only once it is in the caller's (bounded)
//! response channel, so a slow reader slows the command down.
//!
//! The exec ends with the command's exit code; with an error when the
//! container is not running, when the worker's stream closes, or when the
//! worker stops heartbeating, so a dying worker never leaves the caller
//! hanging. A caller that goes away has the command killed.

use std::pin::Pin;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use levers9_api::v1::{
    controlplane_message, exec_event, exec_input, exec_output, exec_request, ControlplaneMessage,
    ExecEvent, ExecExit, ExecInput, ExecOutput, ExecRequest, ExecStart, ExecStartRequest,
};
use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

use crate::error::ApiError;
use crate::fleet::records::{ContainerRecord, ContainerState};
use crate::fleet::Fleet;

/// Stdin chunks sent ahead of what the command took; the worker's
/// `exec::STDIN_WINDOW`.
const STDIN_WINDOW: u64 = 16;
/// The worker sends at most this many output chunks not counted as taken
/// (its `exec::OUTPUT_WINDOW`); they are counted every half window.
const OUTPUT_ACK_EVERY: u64 = 8;
/// Events waiting for the caller to read them.
const EVENT_BUFFER: usize = 8;
/// How long the first request (the start) may take.
const START_WAIT: Duration = Duration::from_secs(10);
/// How often a running exec checks that its worker is still alive.
const LIVENESS_CHECK: Duration = Duration::from_secs(2);

/// What an exec streams back.
pub(super) type ExecStream = Pin<Box<dyn Stream<Item = Result<ExecEvent, Status>> + Send>>;

/// Reads the start that must open an exec.
pub(super) async fn read_start(
    requests: &mut Streaming<ExecRequest>,
) -> Result<ExecStartRequest, ApiError> {
    let first = tokio::time::timeout(START_WAIT, requests.message())
        .await
        .map_err(|_| ApiError::InvalidArgument("no exec start within 10 s".into()))?
        .map_err(|s| {
            ApiError::InvalidArgument(format!("the exec stream broke: {}", s.message()))
        })?;
    match first.and_then(|r| r.kind) {
        Some(exec_request::Kind::Start(start)) => {
            if start.args.first().is_none_or(|a| a.is_empty()) {
                return Err(ApiError::InvalidArgument(
                    "an exec needs a command: args[0] is empty".into(),
                ));
            }
            Ok(start)
        }
        _ => Err(ApiError::InvalidArgument(
            "the first ExecRequest must be a start naming the container and command".into(),
        )),
    }
}

/// Refuses an exec in a container that does not run now.
pub(super) fn require_running(container: &ContainerRecord) -> Result<(), ApiError> {
    let id = &container.id;
    let s = container.state;
    match s {
        ContainerState::Running => Ok(()),
        ContainerState::Exited | ContainerState::Failed | ContainerState::Lost => {
            Err(ApiError::FailedPrecondition(format!(
                "container {id} is not running (it is {s}): an exec needs a running container; \
             start a new one (levers9 container run, or Sandbox.create)"
            )))
        }
        ContainerState::Pending | ContainerState::Scheduled => {
            Err(ApiError::FailedPrecondition(format!(
                "container {id} is not running yet (it is {s}): wait until levers9 container get \
             {id} shows it running"
            )))
        }
    }
}

/// Starts the exec on the container's worker and relays it.
pub(super) async fn open(
    fleet: Fleet,
    container: ContainerRecord,
    start: ExecStartRequest,
    requests: Streaming<ExecRequest>,
) -> Result<ExecStream, ApiError> {
    let exec_id = uuid::Uuid::new_v4().simple().to_string();
    // Subscribed before the start goes out: nothing the worker says is
    // missed.
    let outputs = fleet.follow_exec(&exec_id).await?;
    let relay = Relay {
        fleet,
        worker_id: container.worker_id.clone(),
        container_id: container.id.clone(),
        exec_id,
    };
    relay
        .send(exec_input::Kind::Start(ExecStart {
            container_id: container.id,
            args: start.args,
            env: start.env,
            working_dir: start.working_dir,
            tty: start.tty,
            terminal_size: start.terminal_size,
        }))
        .await?;
    tracing::info!(exec_id = %relay.exec_id, container_id = %relay.container_id, worker_id = %relay.worker_id, "exec requested");
    let (tx, rx) = mpsc::channel(EVENT_BUFFER);
    tokio::spawn(relay.run(requests, outputs, tx));
    Ok(Box::pin(ReceiverStream::new(rx)))
}

struct Relay {
    fleet: Fleet,
    worker_id: String,
    container_id: String,
    exec_id: String,
}

/// How a relay ends.
enum End {
    /// The command exited with this code.
    Exited(i32),
    /// The caller sees this error.
    Failed(ApiError),
    /// The caller went away: the command is killed.
    CallerGone,
}

impl Relay {
    async fn send(&self, kind: exec_input::Kind) -> Result<(), ApiError> {
        let message = ControlplaneMessage {
            kind: Some(controlplane_message::Kind::ExecInput(ExecInput {
                exec_id: self.exec_id.clone(),
                kind: Some(kind),
            })),
        };
        Ok(self.fleet.send_to_worker(&self.worker_id, message).await?)
    }

    async fn run(
        self,
        requests: Streaming<ExecRequest>,
        outputs: BoxStream<'static, Vec<u8>>,
        tx: mpsc::Sender<Result<ExecEvent, Status>>,
    ) {
        let end = match self.relay(requests, outputs, &tx).await {
            Ok(end) => end,
            Err(error) => End::Failed(error),
        };
        let event = match end {
            End::Exited(code) => Ok(ExecEvent {
                kind: Some(exec_event::Kind::ExitCode(code)),
            }),
            End::Failed(error) => {
                tracing::info!(exec_id = %self.exec_id, container_id = %self.container_id, %error, "exec failed");
                // The command may still run (a lost worker's stream): it
                // is told to end, in case anyone still hears.
                let _ = self.send(exec_input::Kind::Kill(true)).await;
                Err(Status::from(error))
            }
            End::CallerGone => {
                tracing::info!(exec_id = %self.exec_id, "the caller of an exec went away; killing it");
                if let Err(error) = self.send(exec_input::Kind::Kill(true)).await {
                    tracing::warn!(exec_id = %self.exec_id, %error, "cannot kill an exec");
                }
                return;
            }
        };
        let _ = tx.send(event).await;
    }

    async fn relay(
        &self,
        mut requests: Streaming<ExecRequest>,
        mut outputs: BoxStream<'static, Vec<u8>>,
        tx: &mpsc::Sender<Result<ExecEvent, Status>>,
    ) -> Result<End, ApiError> {
        let mut reading = true;
        let mut stdin_open = true;
        let (mut stdin_sent, mut stdin_taken) = (0u64, 0u64);
        let (mut output_taken, mut output_acked) = (0u64, 0u64);
        let mut liveness = tokio::time::interval(LIVENESS_CHECK);
        let mut ended_seen = false;
        loop {
            tokio::select! {
                request = requests.message(), if reading && stdin_sent < stdin_taken + STDIN_WINDOW => {
                    let kind = match request {
                        Err(_) => return Ok(End::CallerGone),
                        Ok(None) => {
                            // Half-closed: no more stdin.
                            reading = false;
                            None
                        }
                        Ok(Some(request)) => request.kind,
                    };
                    match kind {
                        Some(exec_request::Kind::Stdin(data)) if stdin_open => {
                            self.send(exec_input::Kind::Stdin(data)).await?;
                            stdin_sent += 1;
                        }
                        Some(exec_request::Kind::Stdin(_)) => {
                            return Err(ApiError::InvalidArgument(
                                "stdin after stdin_close".into(),
                            ));
                        }
                        Some(exec_request::Kind::Resize(size)) => {
                            self.send(exec_input::Kind::Resize(size)).await?;
                        }
                        Some(exec_request::Kind::Start(_)) => {
                            return Err(ApiError::InvalidArgument(
                                "an exec takes one start, as its first request".into(),
                            ));
                        }
                        Some(exec_request::Kind::StdinClose(_)) | None => {
                            if stdin_open {
                                stdin_open = false;
                                self.send(exec_input::Kind::StdinClose(true)).await?;
                            }
                        }
                    }
                }
                output = outputs.next() => {
                    let Some(bytes) = output else {
                        return Err(ApiError::Unavailable(format!(
                            "the hot state's channel of exec {} closed", self.exec_id
                        )));
                    };
                    let Ok(ExecOutput { kind: Some(kind), .. }) = ExecOutput::decode(bytes.as_slice()) else {
                        continue;
                    };
                    let event = match kind {
                        exec_output::Kind::Stdout(data) => exec_event::Kind::Stdout(data),
                        exec_output::Kind::Stderr(data) => exec_event::Kind::Stderr(data),
                        exec_output::Kind::StdinTaken(taken) => {
                            stdin_taken = stdin_taken.max(taken);
                            continue;
                        }
                        exec_output::Kind::Exit(exit) => return Ok(self.ended(exit)),
                    };
                    if tx.send(Ok(ExecEvent { kind: Some(event) })).await.is_err() {
                        return Ok(End::CallerGone);
                    }
                    output_taken += 1;
                    if output_taken >= output_acked + OUTPUT_ACK_EVERY {
                        output_acked = output_taken;
                        self.send(exec_input::Kind::OutputTaken(output_taken)).await?;
                    }
                }
                _ = liveness.tick() => self.check_alive(&mut ended_seen).await?,
                _ = tx.closed() => return Ok(End::CallerGone),
            }
        }
    }

    fn ended(&self, exit: ExecExit) -> End {
        if exit.not_running {
            return End::Failed(ApiError::FailedPrecondition(format!(
                "container {} is not running: it ended; start a new one (levers9 container run, \
                 or Sandbox.create)",
                self.container_id
            )));
        }
        if !exit.error.is_empty() {
            return End::Failed(ApiError::FailedPrecondition(format!(
                "the exec in container {} ended without an exit code: {}",
                self.container_id, exit.error
            )));
        }
        End::Exited(exit.exit_code)
    }

    /// Fails the exec when its worker stopped heartbeating, or when its
    /// container ended and, a check later, the exec's exit has still not
    /// arrived.
    async fn check_alive(&self, ended_seen: &mut bool) -> Result<(), ApiError> {
        if !self.fleet.is_alive(&self.worker_id).await? {
            return Err(self.worker_gone());
        }
        let running = matches!(
            self.fleet.container(&self.container_id).await?,
            Some(c) if c.worker_id == self.worker_id && !c.state.is_final()
        );
        if running {
            return Ok(());
        }
        if std::mem::replace(ended_seen, true) {
            return Err(self.worker_gone());
        }
        Ok(())
    }

    fn worker_gone(&self) -> ApiError {
        ApiError::FailedPrecondition(format!(
            "the exec in container {} was cut short: its worker {} went away or the container \
             ended; see levers9 container get {}",
            self.container_id, self.worker_id, self.container_id
        ))
    }
}
