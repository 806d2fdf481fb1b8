//! The container server: per function container, a Unix socket the
//! function runner (a Python process inside the container) connects to. It
//! takes inputs from the worker and sends back output and results, which
//! the server reports to the controlplane. It also enforces each input's
//! timeout: a Python thread cannot be interrupted, so a task that runs too
//! long costs its container.
//!
//! One runner connection per container, for the container's life: the
//! runner is the container's main process, so once its connection ends the
//! container is on its way out, and later inputs are reported lost.
//!
//! The controlplane may send a container more inputs than its
//! `concurrency` (a short buffer, so a fast function never waits a round
//! trip for its next input). They all go to the runner, whose threads take
//! them in order: each time a running input ends, the oldest waiting one
//! starts, and so does its timer here.

mod auth;
mod connection;
mod named;
mod wire;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use levers9_api::v1::{worker_message, TaskInput, TaskResult, TaskResultState, WorkerMessage};
use levers9_ids::ContainerId;
use levers9_sync::Lock;
use tokio::net::UnixListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use auth::{ServerAuth, CREDENTIAL_VARIABLE};
pub use named::NamedForwarder;
pub use wire::{MAX_BODY_BYTES, MAX_HEADER_BYTES};

/// The parsers of what the runner sends, for the fuzz targets in `fuzz/`
/// (not an API: the runner's only way in is the socket).
#[doc(hidden)]
pub mod fuzzing {
    pub use super::named::{pack as pack_object_body, unpack as unpack_object_body};
    pub use super::wire::{encode, read_frame, FrameError, FromRunner};
}

/// The socket's name in the container's run directory.
pub const SOCKET_NAME: &str = "server.sock";
/// `sun_path` holds 108 bytes, the terminating NUL included.
const MAX_SOCKET_PATH: usize = 107;
/// Output is forwarded in pieces no larger than this, well under gRPC's
/// default message limit, however much the function printed at once.
const OUTPUT_CHUNK: usize = 1 << 20;
/// How long the accept loop rests after a failed accept (out of file
/// descriptors, say) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Stops the container, for inputs that run past their timeout and
/// cancelled ones that already run.
pub type StopContainer = Arc<dyn Fn() + Send + Sync>;

/// Why a container server could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The kernel limits socket paths.
    #[error("the container server's socket path {path} is {len} bytes, over the {MAX_SOCKET_PATH} a Unix socket allows: give the worker a shorter state directory than {state_dir}")]
    PathTooLong {
        /// The socket's path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The worker's state directory, what to shorten.
        state_dir: PathBuf,
    },
    /// The socket or its run directory could not be made (permissions, a
    /// full disk).
    #[error("cannot create the container server socket {path}: {source}")]
    Io {
        /// What was being created.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
}

/// The runner's failure to load the function, as it reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitError {
    /// The exception's last line.
    pub message: String,
    /// The traceback as Python formats it, which the caller's error shows.
    pub traceback: String,
}

/// What the runner told the server over the container's life.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunnerOutcome {
    /// Whether it connected and loaded the function.
    pub said_hello: bool,
    /// Why it could not load the function, if it said.
    pub init_error: Option<InitError>,
}

/// A container's server, listening from [`ContainerServer::bind`] until it
/// is shut down or dropped.
pub struct ContainerServer {
    shared: Arc<Shared>,
    dir: PathBuf,
    accept: JoinHandle<()>,
}

struct Shared {
    /// The container it serves; a spare's is replaced when a run adopts it
    /// (see [`ContainerServer::assign`]).
    container_id: Lock<ContainerId>,
    /// Inputs the runner runs at once (`LEVERS9_CONCURRENCY`).
    concurrency: usize,
    events: mpsc::Sender<WorkerMessage>,
    stop: StopContainer,
    auth: ServerAuth,
    state: Lock<State>,
    /// Where the runner's Dict and Queue calls go; without one they fail.
    named: OnceLock<Arc<NamedForwarder>>,
}

/// The runner's connection.
enum Connection {
    /// Nobody connected yet.
    Waiting,
    /// Connected; `admitted` once it presented the container's id and
    /// credential (in `attach` or `hello`), so its Dict and Queue calls
    /// are served; `ready` once it said hello, and whether it said it
    /// answers cancels. Frames for it go to `writer`.
    Open {
        writer: mpsc::UnboundedSender<Vec<u8>>,
        admitted: bool,
        ready: bool,
        cancels: bool,
    },
    /// Gone, for this reason (inputs from now on are lost).
    Closed(&'static str),
}

struct State {
    connection: Connection,
    /// Inputs that came before the runner said hello, in order.
    queued: Vec<TaskInput>,
    /// Inputs given to the runner and running, with their timers.
    running: HashMap<String, Option<JoinHandle<()>>>,
    /// Inputs given to the runner while all its threads were busy, oldest
    /// first, with their timeouts (ms): waiting in its queue.
    waiting: VecDeque<(String, u64)>,
    outcome: RunnerOutcome,
    /// Set once a spare's runner said it waits for a function: the
    /// top-level modules it has imported.
    spare_modules: Option<Vec<String>>,
    /// The connection's reader and writer, aborted at shutdown.
    connection_tasks: Vec<JoinHandle<()>>,
}

fn message(kind: worker_message::Kind) -> WorkerMessage {
    WorkerMessage { kind: Some(kind) }
}

/// Whether `id` is safe as a directory name (the runtimes' rule for ids).
/// `10000` → `10`, `1500` → `1.5`.
fn seconds(ms: u64) -> String {
    format!("{}", ms as f64 / 1000.0)
}

impl ContainerServer {
    /// Listens on `<run_root>/<container_id>/server.sock` (the directory is
    /// created; the caller mounts it into the container and removes it when
    /// the container is gone). What the runner says is reported on
    /// `events`; `stop` is called when an input times out; `auth` checks
    /// the runner's credential. The runner runs `concurrency` inputs at
    /// once. `state_dir` is only named in errors.
    ///
    /// # Errors
    /// A socket path too long for the kernel, or a filesystem failure.
    /// (The id is a [`ContainerId`], so a plain directory name.)
    pub fn bind(
        run_root: &Path,
        state_dir: &Path,
        container_id: &ContainerId,
        events: mpsc::Sender<WorkerMessage>,
        stop: StopContainer,
        auth: ServerAuth,
        concurrency: usize,
    ) -> Result<ContainerServer, BindError> {
        use std::os::unix::fs::PermissionsExt;

        let dir = run_root.join(container_id);
        let socket = dir.join(SOCKET_NAME);
        let len = socket.as_os_str().len();
        if len > MAX_SOCKET_PATH {
            return Err(BindError::PathTooLong {
                path: socket,
                len,
                state_dir: state_dir.to_owned(),
            });
        }
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| BindError::Io { path, source }
        };
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        // A leftover of a crashed worker would make bind fail.
        match std::fs::remove_file(&socket) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&socket)(e)),
            _ => {}
        }
        let listener = UnixListener::bind(&socket).map_err(io(&socket))?;
        // The runner may run as any user, mapped to any host uid: the
        // directory is mounted into this one container only, so let
        // everyone in it connect.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).map_err(io(&dir))?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666))
            .map_err(io(&socket))?;
        let shared = Arc::new(Shared {
            container_id: Lock::new(container_id.clone()),
            concurrency: concurrency.max(1),
            events,
            stop,
            auth,
            state: Lock::new(State {
                connection: Connection::Waiting,
                queued: Vec::new(),
                running: HashMap::new(),
                waiting: VecDeque::new(),
                outcome: RunnerOutcome::default(),
                spare_modules: None,
                connection_tasks: Vec::new(),
            }),
            named: OnceLock::new(),
        });
        let accept = tokio::spawn(connection::accept_loop(shared.clone(), listener));
        Ok(ContainerServer {
            shared,
            dir,
            accept,
        })
    }

    /// The directory holding the socket, to mount at `/levers9/run`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The credential variable for the container's environment, if its
    /// mode issues one.
    pub fn credential_env(&self) -> Option<(String, String)> {
        self.shared.auth.env()
    }

    /// Hands an input to the runner; queued until it says hello, reported
    /// lost once it is gone.
    pub fn send_input(&self, input: TaskInput) {
        let mut state = self.shared.state();
        match state.connection {
            Connection::Waiting | Connection::Open { ready: false, .. } => {
                state.queued.push(input);
            }
            Connection::Open { ready: true, .. } => self.shared.deliver(&mut state, input),
            Connection::Closed(why) => {
                drop(state);
                self.shared.report_lost(&input.task_id, why);
            }
        }
    }

    /// Takes the inputs waiting for the runner's hello, for another
    /// container's server to run.
    pub fn take_queued(&self) -> Vec<TaskInput> {
        std::mem::take(&mut self.shared.state().queued)
    }

    /// The caller no longer wants an input. One still waiting for the
    /// runner's hello is dropped here; one the runner holds is cancelled
    /// there, and the runner answers with a cancelled result (it had not
    /// started) or a refusal (it runs, and the container is stopped). One
    /// that already ended is left alone: its result is on its way.
    pub fn cancel_input(&self, task_id: &str) {
        let mut state = self.shared.state();
        if let Some(at) = state.queued.iter().position(|i| i.task_id == task_id) {
            state.queued.remove(at);
            drop(state);
            return self
                .shared
                .report_later(cancelled(&self.shared.id(), task_id));
        }
        if !state.runs(task_id) {
            return;
        }
        match &state.connection {
            Connection::Open {
                writer,
                cancels: true,
                ..
            } => {
                let frame = wire::encode(
                    &serde_json::json!({"type": "cancel", "task_id": task_id}),
                    &[],
                );
                // A closed writer means the runner is gone: the input is
                // reported lost with the others it held.
                let _ = writer.send(frame);
            }
            Connection::Open { .. } => {
                drop(state);
                tracing::info!(container_id = %self.shared.id(), %task_id, "the function runner cannot drop a cancelled input; stopping its container");
                (self.shared.stop)();
            }
            Connection::Waiting | Connection::Closed(_) => {}
        }
    }

    /// Forwards the runner's Dict and Queue calls through `forwarder`
    /// (once; later calls change nothing).
    pub fn forward_named(&self, forwarder: Arc<NamedForwarder>) {
        let _ = self.shared.named.set(forwarder);
    }

    /// The caller of a generator's task has taken `received` of its items:
    /// the runner, which sends items only while few enough are
    /// unacknowledged, may send more. Ignored for a task the runner no
    /// longer runs.
    pub fn ack_items(&self, task_id: &str, received: u64) {
        let state = self.shared.state();
        if !state.runs(task_id) {
            return;
        }
        if let Connection::Open { writer, .. } = &state.connection {
            let frame = wire::encode(
                &serde_json::json!({"type": "ack", "task_id": task_id, "received": received}),
                &[],
            );
            // A closed writer means the runner is gone; nothing to tell.
            let _ = writer.send(frame);
        }
    }

    /// The top-level modules a spare's runner has imported, once it waits
    /// for a function (`LEVERS9_SPARE`); `None` before, and once assigned.
    pub fn spare_modules(&self) -> Option<Vec<String>> {
        self.shared.state().spare_modules.clone()
    }

    /// Gives a waiting spare's runner its function: from now on this server
    /// serves the container `container_id`, and the runner sets `env` and
    /// enters `working_dir` (unless empty) before it loads the function,
    /// then says hello as that container. False, and nothing changed, when
    /// the runner is not waiting (not ready yet, or gone).
    pub fn assign(
        &self,
        container_id: &ContainerId,
        env: &BTreeMap<String, String>,
        working_dir: &str,
    ) -> bool {
        let mut state = self.shared.state();
        let Connection::Open { writer, .. } = &state.connection else {
            return false;
        };
        if state.spare_modules.is_none() {
            return false;
        }
        let frame = wire::encode(
            &serde_json::json!({
                "type": "assign",
                "container_id": container_id.as_str(),
                "env": env,
                "working_dir": working_dir,
            }),
            &[],
        );
        // Before the frame goes out: the runner's hello names the new id.
        let spare_id =
            std::mem::replace(&mut *self.shared.container_id.lock(), container_id.clone());
        if writer.send(frame).is_err() {
            *self.shared.container_id.lock() = spare_id;
            return false;
        }
        state.spare_modules = None;
        true
    }

    /// What the runner said so far.
    pub fn outcome(&self) -> RunnerOutcome {
        self.shared.state().outcome.clone()
    }

    /// Ends the server once its container is gone: inputs never delivered
    /// are reported lost (they never ran). Returns what the runner said.
    pub async fn shut_down(&self) -> RunnerOutcome {
        let (queued, outcome) = {
            let mut state = self.shared.state();
            state.connection = Connection::Closed("its container has ended");
            for timer in state.running.drain().filter_map(|(_, timer)| timer) {
                timer.abort();
            }
            for task in state.connection_tasks.drain(..) {
                task.abort();
            }
            (state.never_started(), state.outcome.clone())
        };
        self.accept.abort();
        for task_id in queued {
            self.shared
                .report(lost(&self.shared.id(), &task_id, "its container has ended"))
                .await;
        }
        outcome
    }
}

impl Drop for ContainerServer {
    fn drop(&mut self) {
        self.accept.abort();
        let mut state = self.shared.state();
        for task in state.connection_tasks.drain(..) {
            task.abort();
        }
        for timer in state.running.drain().filter_map(|(_, timer)| timer) {
            timer.abort();
        }
    }
}

/// The result of an input that never ran here: `lost` (it goes back to
/// the queue) or `cancelled` (nobody wants it).
fn never_ran(
    container_id: &ContainerId,
    task_id: &str,
    state: TaskResultState,
    why: String,
) -> WorkerMessage {
    message(worker_message::Kind::TaskResult(TaskResult {
        container_id: container_id.to_string(),
        task_id: task_id.to_owned(),
        state: state.into(),
        message: why,
        ..TaskResult::default()
    }))
}

fn lost(container_id: &ContainerId, task_id: &str, why: &str) -> WorkerMessage {
    let why = format!("the input never ran in container {container_id}: {why}");
    never_ran(container_id, task_id, TaskResultState::Lost, why)
}

fn cancelled(container_id: &ContainerId, task_id: &str) -> WorkerMessage {
    let why = "cancelled before it started".to_owned();
    never_ran(container_id, task_id, TaskResultState::Cancelled, why)
}

impl State {
    /// Whether the runner has the input, running or waiting.
    fn runs(&self, task_id: &str) -> bool {
        self.running.contains_key(task_id) || self.waiting.iter().any(|(id, _)| id == task_id)
    }

    /// Takes the inputs the runner never started: those waiting for its
    /// hello, then those waiting in its queue.
    fn never_started(&mut self) -> Vec<String> {
        let queued = std::mem::take(&mut self.queued).into_iter();
        let waiting = std::mem::take(&mut self.waiting).into_iter();
        queued
            .map(|input| input.task_id)
            .chain(waiting.map(|(task_id, _)| task_id))
            .collect()
    }
}

impl Shared {
    /// The container it serves now.
    fn id(&self) -> ContainerId {
        self.container_id.lock().clone()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Each critical section is a few map and queue operations.
        self.state.lock()
    }

    async fn report(&self, message: WorkerMessage) {
        // The receiver lives as long as the worker; a send fails only while
        // it shuts down, when nothing is left to tell.
        let _ = self.events.send(message).await;
    }

    /// Reports from code that cannot wait (it holds the state, or is called
    /// from the session loop, which must not block).
    fn report_later(&self, report: WorkerMessage) {
        let events = self.events.clone();
        tokio::spawn(async move {
            let _ = events.send(report).await;
        });
    }

    fn report_lost(&self, task_id: &str, why: &str) {
        self.report_later(lost(&self.id(), task_id, why));
    }

    /// Sends an input to a runner that said hello, and starts its timer if
    /// a thread of the runner is free to take it.
    fn deliver(self: &Arc<Self>, state: &mut State, input: TaskInput) {
        let Connection::Open { writer, .. } = &state.connection else {
            return self.report_lost(&input.task_id, "the function runner is not connected");
        };
        let frame = wire::encode(
            &serde_json::json!({
                "type": "input",
                "task_id": input.task_id,
                "attempt": input.attempt,
            }),
            &input.payload,
        );
        if writer.send(frame).is_err() {
            return self.report_lost(&input.task_id, "the function runner has disconnected");
        }
        if state.running.len() < self.concurrency {
            self.start(state, input.task_id, input.timeout_ms);
        } else {
            state.waiting.push_back((input.task_id, input.timeout_ms));
        }
    }

    /// The runner started an input: its timer starts.
    fn start(self: &Arc<Self>, state: &mut State, task_id: String, timeout_ms: u64) {
        let timer = (timeout_ms > 0)
            .then(|| tokio::spawn(time_out(Arc::downgrade(self), task_id.clone(), timeout_ms)));
        if let Some(Some(previous)) = state.running.insert(task_id, timer) {
            // The same task again (a retry on this container): the new
            // attempt gets the whole timeout.
            previous.abort();
        }
    }

    /// An input ended: out of the runner's hands. The thread it freed takes
    /// the oldest waiting input, which starts now. False if the input was
    /// not the runner's (it timed out, or was never sent).
    fn end(self: &Arc<Self>, state: &mut State, task_id: &str) -> bool {
        if let Some(timer) = state.running.remove(task_id) {
            if let Some(timer) = timer {
                timer.abort();
            }
        } else if let Some(at) = state.waiting.iter().position(|(id, _)| id == task_id) {
            state.waiting.remove(at);
        } else {
            return false;
        }
        if state.running.len() < self.concurrency {
            if let Some((next, timeout_ms)) = state.waiting.pop_front() {
                self.start(state, next, timeout_ms);
            }
        }
        true
    }
}

/// Fires when an input has run for `timeout_ms`: reports the timeout and
/// stops the container, unless the result came first.
async fn time_out(shared: Weak<Shared>, task_id: String, timeout_ms: u64) {
    tokio::time::sleep(Duration::from_millis(timeout_ms)).await;
    let Some(shared) = shared.upgrade() else {
        return;
    };
    // Whoever removes the task (this timer or its result) reports it.
    if shared.state().running.remove(&task_id).is_none() {
        return;
    }
    tracing::warn!(container_id = %shared.id(), %task_id, timeout_s = %seconds(timeout_ms), "an input ran past its timeout; stopping its container");
    // Stop first: the report may wait while the stream to the controlplane
    // is down, and the runaway function should not.
    (shared.stop)();
    let result = TaskResult {
        container_id: shared.id().to_string(),
        task_id,
        state: TaskResultState::Timeout.into(),
        message: format!(
            "timed out after {} s (the function's timeout)",
            seconds(timeout_ms)
        ),
        ..TaskResult::default()
    };
    shared
        .report(message(worker_message::Kind::TaskResult(result)))
        .await;
}

#[cfg(test)]
mod tests;
