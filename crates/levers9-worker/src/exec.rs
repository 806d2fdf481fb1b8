//! Commands run in this worker's running containers for
//! `ContainerService.ExecContainer`, driven by the controlplane's
//! [`ExecInput`]s and reported as [`ExecOutput`]s on the worker's stream,
//! both named by the exec's id.
//!
//! Both directions are bounded. Output: at most [`OUTPUT_WINDOW`] chunks
//! are sent that the controlplane has not counted as taken by the caller
//! (`output_taken`); past that the readers stop, the pipes fill and the
//! command blocks on its writes. Stdin: the controlplane sends at most
//! [`STDIN_WINDOW`] chunks the command has not taken (`stdin_taken`), so
//! each exec's stdin queue never holds more.
//!
//! With a terminal (`tty`) the command's stdin, stdout and stderr are one
//! terminal of the runtime's: its output goes out as stdout, stdin is
//! written to it, `resize` gives it a new size and `stdin_close` is moot.
//!
//! An exec ends with one `exit`: the command's code, or why it could not
//! run. When the stream to the controlplane breaks, every exec is killed:
//! its caller was told the exec failed and nobody reads on.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use levers9_api::v1::{
    exec_input, exec_output, worker_message, ExecExit, ExecInput, ExecOutput, ExecStart,
    TerminalSize, WorkerMessage,
};
use levers9_ids::ContainerId;
use levers9_runtime::{ExecProcess, ExecSpec, Runtime, RuntimeError, Terminal, WindowSize};
use levers9_sync::Lock;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use crate::supervisor::RuntimeIds;

/// Output chunks in flight to the caller, not yet counted as taken.
pub(crate) const OUTPUT_WINDOW: u64 = 16;
/// Stdin chunks the controlplane may send ahead of the command.
pub(crate) const STDIN_WINDOW: usize = 16;
/// The most bytes of one output chunk.
const CHUNK_BYTES: usize = 32 << 10;
/// How long output is still read after the command exited (a process it
/// left in the background may hold its pipes open).
const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

enum Stdin {
    Data(Vec<u8>),
    Close,
}

/// What the session's side holds of one running exec.
struct Entry {
    stdin: mpsc::Sender<Stdin>,
    taken: watch::Sender<u64>,
    kill: watch::Sender<bool>,
    /// The terminal's latest size (an exec with a terminal).
    size: watch::Sender<WindowSize>,
}

impl Entry {
    fn kill(&self) {
        self.kill.send_replace(true);
    }
}

/// The execs of this worker. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Execs {
    runtime: Arc<dyn Runtime>,
    events: mpsc::Sender<WorkerMessage>,
    /// Containers that run in an adopted spare are the spare to the runtime.
    runtime_ids: RuntimeIds,
    live: Arc<Lock<HashMap<String, Entry>>>,
}

fn report(exec_id: &str, kind: exec_output::Kind) -> WorkerMessage {
    WorkerMessage {
        kind: Some(worker_message::Kind::ExecOutput(ExecOutput {
            exec_id: exec_id.to_owned(),
            kind: Some(kind),
        })),
    }
}

impl Execs {
    pub(crate) fn new(
        runtime: Arc<dyn Runtime>,
        events: mpsc::Sender<WorkerMessage>,
        runtime_ids: RuntimeIds,
    ) -> Self {
        Execs {
            runtime,
            events,
            runtime_ids,
            live: Arc::default(),
        }
    }

    /// Carries out one message of the controlplane's about an exec. Never
    /// waits: the session reads on.
    pub(crate) fn input(&self, input: ExecInput) {
        let exec_id = input.exec_id;
        let Some(kind) = input.kind else { return };
        if let exec_input::Kind::Start(start) = kind {
            self.start(exec_id, start);
            return;
        }
        let live = self.live.lock();
        let Some(entry) = live.get(&exec_id) else {
            // It ended already; what was on its way is moot.
            return;
        };
        match kind {
            exec_input::Kind::Start(_) => {}
            exec_input::Kind::Stdin(data) => {
                if entry.stdin.try_send(Stdin::Data(data)).is_err() {
                    tracing::warn!(%exec_id, "stdin past the window; ending the exec");
                    entry.kill();
                }
            }
            exec_input::Kind::StdinClose(_) => {
                if entry.stdin.try_send(Stdin::Close).is_err() {
                    entry.kill();
                }
            }
            exec_input::Kind::OutputTaken(taken) => {
                entry.taken.send_if_modified(|t| {
                    let more = taken > *t;
                    *t = (*t).max(taken);
                    more
                });
            }
            exec_input::Kind::Kill(_) => entry.kill(),
            exec_input::Kind::Resize(size) => {
                entry.size.send_replace(window_size(Some(size)));
            }
        }
    }

    /// Kills every exec: the stream they were reported on is gone.
    pub(crate) fn end_all(&self) {
        for entry in self.live.lock().values() {
            entry.kill();
        }
    }

    fn start(&self, exec_id: String, start: ExecStart) {
        let (stdin_tx, stdin_rx) = mpsc::channel(STDIN_WINDOW + 1);
        let (taken_tx, taken_rx) = watch::channel(0);
        let (kill_tx, kill_rx) = watch::channel(false);
        let (size_tx, size_rx) = watch::channel(window_size(start.terminal_size));
        let entry = Entry {
            stdin: stdin_tx,
            taken: taken_tx,
            kill: kill_tx,
            size: size_tx,
        };
        if self.live.lock().insert(exec_id.clone(), entry).is_some() {
            tracing::warn!(%exec_id, "an exec id came twice; the first one is killed");
        }
        let execs = self.clone();
        tokio::spawn(async move {
            let channels = Channels {
                stdin: stdin_rx,
                taken: taken_rx,
                kill: kill_rx,
                size: size_rx,
            };
            let exit = execs.run(&exec_id, start, channels).await;
            execs.live.lock().remove(&exec_id);
            let _ = execs
                .events
                .send(report(&exec_id, exec_output::Kind::Exit(exit)))
                .await;
        });
    }

    async fn run(&self, exec_id: &str, start: ExecStart, channels: Channels) -> ExecExit {
        // An id that is not valid names no container here.
        let container_id = match ContainerId::parse(start.container_id) {
            Ok(id) => id,
            Err(invalid) => {
                let error = RuntimeError::NotFound(invalid.0);
                tracing::info!(%exec_id, %error, "exec refused");
                return ExecExit {
                    exit_code: -1,
                    not_running: false,
                    error: error.to_string(),
                };
            }
        };
        let spec = ExecSpec {
            args: start.args,
            env: start.env.into_iter().collect(),
            cwd: Some(start.working_dir).filter(|d| !d.is_empty()),
            tty: start.tty.then(|| window_size(start.terminal_size)),
        };
        let runtime_id = self.runtime_ids.resolve(&container_id);
        match self.runtime.exec(&runtime_id, &spec).await {
            Ok(process) => {
                tracing::info!(%exec_id, %container_id, "exec started");
                let exit = drive(process, exec_id, &self.events, channels).await;
                tracing::info!(%exec_id, %container_id, exit_code = exit.exit_code, error = %exit.error, "exec ended");
                exit
            }
            Err(error) => {
                tracing::info!(%exec_id, %container_id, %error, "exec refused");
                ExecExit {
                    exit_code: -1,
                    not_running: matches!(error, RuntimeError::NotRunning(_)),
                    error: error.to_string(),
                }
            }
        }
    }
}

struct Channels {
    stdin: mpsc::Receiver<Stdin>,
    taken: watch::Receiver<u64>,
    kill: watch::Receiver<bool>,
    size: watch::Receiver<WindowSize>,
}

/// A size from the wire; unknown parts are the default's.
fn window_size(size: Option<TerminalSize>) -> WindowSize {
    let size = size.unwrap_or_default();
    WindowSize::new(size.rows, size.cols)
}

/// Moves stdin in and output out until the command ended and its output
/// was sent (or the exec was killed).
async fn drive(
    mut process: ExecProcess,
    exec_id: &str,
    events: &mpsc::Sender<WorkerMessage>,
    channels: Channels,
) -> ExecExit {
    let Channels {
        stdin,
        mut taken,
        kill,
        size,
    } = channels;
    let (out_tx, mut out_rx) = mpsc::channel(2);
    let terminal = process.terminal.take();
    let input: Option<Box<dyn AsyncWrite + Send + Unpin>> = match &terminal {
        Some(terminal) => Some(Box::new(terminal.clone())),
        None => process
            .stdin
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncWrite + Send + Unpin>),
    };
    let stdin_pump = tokio::spawn(pump_stdin(input, stdin, events.clone(), exec_id.to_owned()));
    let resizer = terminal.clone().map(|t| tokio::spawn(follow_size(t, size)));
    // Aborted at the end: a terminal's reader would otherwise wait on
    // anything still holding its slave (a process the command left behind).
    let terminal_reader = terminal.map(|t| tokio::spawn(read_pipe(t, false, out_tx.clone())));
    if let Some(out) = process.stdout.take() {
        tokio::spawn(read_pipe(out, false, out_tx.clone()));
    }
    if let Some(err) = process.stderr.take() {
        tokio::spawn(read_pipe(err, true, out_tx.clone()));
    }
    drop(out_tx);
    let mut waiter = tokio::spawn(wait_or_kill(process, kill.clone()));
    let mut ended: Option<Result<i32, String>> = None;
    let mut sent = 0u64;
    let drain = tokio::time::sleep(Duration::MAX);
    tokio::pin!(drain);
    loop {
        tokio::select! {
            chunk = out_rx.recv() => {
                let Some((is_stderr, data)) = chunk else { break };
                if !credit(&mut taken, sent, kill.clone()).await {
                    break;
                }
                let kind = if is_stderr {
                    exec_output::Kind::Stderr(data)
                } else {
                    exec_output::Kind::Stdout(data)
                };
                if events.send(report(exec_id, kind)).await.is_err() {
                    break;
                }
                sent += 1;
            }
            joined = &mut waiter, if ended.is_none() => {
                ended = Some(joined.unwrap_or_else(|e| Err(format!("the exec's waiter failed: {e}"))));
                drain.as_mut().reset(tokio::time::Instant::now() + OUTPUT_DRAIN);
            }
            _ = &mut drain => break,
        }
    }
    let ended = match ended {
        Some(ended) => ended,
        None => waiter
            .await
            .unwrap_or_else(|e| Err(format!("the exec's waiter failed: {e}"))),
    };
    stdin_pump.abort();
    for task in resizer.into_iter().chain(terminal_reader) {
        task.abort();
    }
    match ended {
        Ok(code) => ExecExit {
            exit_code: code,
            ..ExecExit::default()
        },
        Err(error) => ExecExit {
            exit_code: -1,
            error,
            not_running: false,
        },
    }
}

/// Waits until the caller has room for one more chunk: false when the exec
/// is killed meanwhile.
async fn credit(
    taken: &mut watch::Receiver<u64>,
    sent: u64,
    mut kill: watch::Receiver<bool>,
) -> bool {
    tokio::select! {
        room = taken.wait_for(|t| sent < t + OUTPUT_WINDOW) => room.is_ok(),
        _ = kill.wait_for(|k| *k) => false,
    }
}

/// The command's exit code, or why it has none (it was killed).
async fn wait_or_kill(
    mut process: ExecProcess,
    mut kill: watch::Receiver<bool>,
) -> Result<i32, String> {
    tokio::select! {
        code = process.wait() => return code.map_err(|e| e.to_string()),
        _ = kill.wait_for(|k| *k) => {}
    }
    process.kill().await;
    Err("the exec was ended: its caller went away".to_owned())
}

async fn read_pipe(
    mut pipe: impl AsyncRead + Unpin,
    is_stderr: bool,
    out: mpsc::Sender<(bool, Vec<u8>)>,
) {
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if out.send((is_stderr, buf[..n].to_vec())).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Gives the terminal each new size the caller sends.
async fn follow_size(terminal: Terminal, mut size: watch::Receiver<WindowSize>) {
    while size.changed().await.is_ok() {
        let new = *size.borrow_and_update();
        if let Err(error) = terminal.resize(new) {
            tracing::debug!(%error, "cannot resize an exec's terminal");
        }
    }
}

/// Writes stdin to the command and counts each chunk taken, also those a
/// command that closed its stdin can no longer take, so the caller never
/// waits on it.
async fn pump_stdin(
    stdin: Option<Box<dyn AsyncWrite + Send + Unpin>>,
    mut chunks: mpsc::Receiver<Stdin>,
    events: mpsc::Sender<WorkerMessage>,
    exec_id: String,
) {
    let mut stdin = stdin;
    let mut taken = 0u64;
    while let Some(chunk) = chunks.recv().await {
        match chunk {
            Stdin::Data(data) => {
                if let Some(pipe) = stdin.as_mut() {
                    if pipe.write_all(&data).await.is_err() {
                        stdin = None;
                    }
                }
                taken += 1;
                let taken = exec_output::Kind::StdinTaken(taken);
                if events.send(report(&exec_id, taken)).await.is_err() {
                    return;
                }
            }
            Stdin::Close => stdin = None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_runtime::{Call, FakeRuntime};

    /// Starts an exec of `true` in `container_id` and returns how it ended.
    async fn exec_in(runtime: Arc<FakeRuntime>, container_id: &str) -> ExecExit {
        let (events, mut reports) = mpsc::channel(4);
        let execs = Execs::new(runtime, events, RuntimeIds::default());
        execs.input(ExecInput {
            exec_id: "e1".into(),
            kind: Some(exec_input::Kind::Start(ExecStart {
                container_id: container_id.into(),
                args: vec!["true".into()],
                ..ExecStart::default()
            })),
        });
        match reports.recv().await.and_then(|m| m.kind) {
            Some(worker_message::Kind::ExecOutput(ExecOutput {
                kind: Some(exec_output::Kind::Exit(exit)),
                ..
            })) => exit,
            other => panic!("expected the exec's exit, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn an_exec_in_a_container_whose_id_is_not_valid_is_not_found_and_never_run() {
        let runtime = Arc::new(FakeRuntime::default());
        let exit = exec_in(runtime.clone(), "../c1").await;
        assert_eq!(
            (exit.exit_code, exit.not_running, exit.error.as_str()),
            (-1, false, "container ../c1 not found")
        );
        assert_eq!(runtime.calls(), []);
    }

    #[tokio::test]
    async fn an_exec_in_a_container_that_is_not_running_says_so() {
        let runtime = Arc::new(FakeRuntime::default());
        let exit = exec_in(runtime.clone(), "c1").await;
        assert!(exit.not_running, "{exit:?}");
        assert_eq!(
            runtime.calls(),
            [Call::Exec("c1".into(), vec!["true".into()])]
        );
    }
}
