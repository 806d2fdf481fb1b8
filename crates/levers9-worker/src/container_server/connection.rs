//! The runner's connection: accepting it (only one), reading its frames
//! and acting on them, writing the worker's.

use std::sync::Arc;

use levers9_api::v1::{
    worker_message, RunnerReady, TaskItem, TaskOutput, TaskResult, WorkerMessage,
};
use levers9_ids::ContainerId;
use tokio::io::AsyncWriteExt;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixListener;
use tokio::sync::mpsc;

use super::wire::{self, FromRunner};
use super::{lost, message, Connection, InitError, Shared, State, ACCEPT_BACKOFF, OUTPUT_CHUNK};

impl Shared {
    /// Handles one message; `Err` closes the connection.
    async fn handle(self: &Arc<Self>, said: FromRunner, body: Vec<u8>) -> Result<(), String> {
        match said {
            FromRunner::Attach {
                container_id,
                credential,
            } => {
                self.prove(&container_id, &credential, "attach")?;
                tracing::debug!(container_id = %self.id(), "the function runner attached; its Dict and Queue calls are served");
                self.admit(&mut self.state());
            }
            FromRunner::Spare {
                container_id,
                credential,
                modules,
            } => {
                self.prove(&container_id, &credential, "spare")?;
                tracing::info!(container_id = %self.id(), "a spare's function runner waits for its function");
                let mut state = self.state();
                self.admit(&mut state);
                state.spare_modules = Some(modules);
            }
            FromRunner::Hello {
                container_id,
                credential,
                cancels: answers_cancels,
            } => {
                self.prove(&container_id, &credential, "hello")?;
                if self.state().outcome.said_hello {
                    tracing::warn!(container_id = %self.id(), "the function runner said hello twice; ignored");
                    return Ok(());
                }
                tracing::info!(container_id = %self.id(), "the function runner is ready");
                // Reported before any input goes out, so the controlplane
                // hears of the runner before any of its results.
                self.report(message_ready(&self.id())).await;
                let mut state = self.state();
                state.outcome.said_hello = true;
                self.admit(&mut state);
                if let Connection::Open { ready, cancels, .. } = &mut state.connection {
                    *ready = true;
                    *cancels = answers_cancels;
                }
                for input in std::mem::take(&mut state.queued) {
                    self.deliver(&mut state, input);
                }
            }
            FromRunner::InitError {
                credential,
                message,
                traceback,
            } => {
                if !self.auth.admits(&credential, "init_error") {
                    return Err("the runner did not present the container's credential".into());
                }
                // The message is the user's exception: it stays out of the
                // worker's logs and goes to the container's exit event.
                tracing::info!(container_id = %self.id(), "the function runner could not load the function");
                self.state().outcome.init_error = Some(InitError { message, traceback });
            }
            FromRunner::Output { task_id, stream } => {
                if !self.state().runs(&task_id) {
                    tracing::debug!(container_id = %self.id(), %task_id, "output of a task that is not running; dropped");
                    return Ok(());
                }
                for data in body.chunks(OUTPUT_CHUNK) {
                    let output = TaskOutput {
                        container_id: self.id().to_string(),
                        task_id: task_id.clone(),
                        stream: stream.as_str().to_owned(),
                        data: data.to_vec(),
                    };
                    self.report(message(worker_message::Kind::TaskOutput(output)))
                        .await;
                }
            }
            FromRunner::Result {
                task_id,
                state,
                message: text,
                traceback,
            } => {
                if !self.end(&mut self.state(), &task_id) {
                    tracing::info!(container_id = %self.id(), %task_id, "a result for a task that timed out or was never sent; ignored");
                    return Ok(());
                }
                let result = TaskResult {
                    container_id: self.id().to_string(),
                    task_id,
                    state: state.to_wire().into(),
                    payload: body,
                    traceback,
                    message: text,
                };
                self.report(message(worker_message::Kind::TaskResult(result)))
                    .await;
            }
            FromRunner::ObjectCall(call) => self.object_call(call, body),
            FromRunner::Item { task_id, index } => {
                if !self.state().runs(&task_id) {
                    tracing::debug!(container_id = %self.id(), %task_id, "an item of a task that is not running; dropped");
                    return Ok(());
                }
                let item = TaskItem {
                    container_id: self.id().to_string(),
                    task_id,
                    item_index: index,
                    payload: body,
                };
                self.report(message(worker_message::Kind::TaskItem(item)))
                    .await;
            }
            FromRunner::CancelRefused { task_id } => {
                if self.state().runs(&task_id) {
                    tracing::info!(container_id = %self.id(), %task_id, "a cancelled input is already running and cannot be interrupted; stopping its container");
                    (self.stop)();
                }
            }
            FromRunner::Unknown => {
                tracing::debug!(container_id = %self.id(), "a message of a kind this worker does not know; ignored");
            }
        }
        Ok(())
    }
}

impl Shared {
    /// Checks that the runner is this container's: its credential and the
    /// id it names (a runner mounted in the wrong place, or a socket
    /// reached some other way, is refused). `Err` closes the connection.
    fn prove(&self, container_id: &str, credential: &str, call: &str) -> Result<(), String> {
        if !self.auth.admits(credential, call) {
            return Err("the runner did not present the container's credential".into());
        }
        // The runner's text is only compared: equal to ours, it is valid.
        if container_id != self.id().as_str() {
            return Err(format!(
                "the runner says {call} as container {container_id:?}"
            ));
        }
        Ok(())
    }

    /// The runner proved itself: its Dict and Queue calls are served.
    fn admit(&self, state: &mut State) {
        if let Connection::Open { admitted, .. } = &mut state.connection {
            *admitted = true;
        }
    }
}

fn message_ready(container_id: &ContainerId) -> WorkerMessage {
    message(worker_message::Kind::RunnerReady(RunnerReady {
        container_id: container_id.to_string(),
    }))
}

pub(super) async fn accept_loop(shared: Arc<Shared>, listener: UnixListener) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!(container_id = %shared.id(), %error, "cannot accept a connection to the container server");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let mut state = shared.state();
        if !matches!(state.connection, Connection::Waiting) {
            tracing::warn!(container_id = %shared.id(), "refused a second connection to the container server: one runner per container");
            continue;
        }
        // Where a function container's start goes: the runner connects
        // once Python is up and the runner's own modules are imported.
        tracing::debug!(container_id = %shared.id(), "the function runner connected");
        let (tx, rx) = mpsc::unbounded_channel();
        state.connection = Connection::Open {
            writer: tx,
            admitted: false,
            ready: false,
            cancels: false,
        };
        let (read, write) = stream.into_split();
        state
            .connection_tasks
            .push(tokio::spawn(write_frames(write, rx)));
        state
            .connection_tasks
            .push(tokio::spawn(read_frames(shared.clone(), read)));
    }
}

async fn write_frames(mut write: OwnedWriteHalf, mut frames: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(frame) = frames.recv().await {
        if let Err(error) = write.write_all(&frame).await {
            tracing::warn!(%error, "cannot write to the function runner");
            return;
        }
    }
}

async fn read_frames(shared: Arc<Shared>, read: OwnedReadHalf) {
    let mut reader = tokio::io::BufReader::new(read);
    let why = loop {
        match wire::read_frame(&mut reader).await {
            Ok(Some((said, body))) => {
                if let Err(reason) = shared.handle(said, body).await {
                    tracing::warn!(container_id = %shared.id(), %reason, "the function runner sent a bad message; closing its connection");
                    break "the function runner sent a bad message";
                }
            }
            Ok(None) => {
                tracing::info!(container_id = %shared.id(), "the function runner disconnected");
                break "the function runner has disconnected";
            }
            Err(error) => {
                tracing::warn!(container_id = %shared.id(), %error, "bad frame from the function runner; closing its connection");
                break "the function runner sent a bad message";
            }
        }
    };
    // Dropping the writer's sender ends the writer, which closes the socket
    // with this task's read half. Inputs still waiting for a hello or in
    // the runner's queue will never run here: they go back to the queue
    // now, not when the container ends.
    let queued = {
        let mut state = shared.state();
        state.connection = Connection::Closed(why);
        state.never_started()
    };
    for task_id in queued {
        shared.report(lost(&shared.id(), &task_id, why)).await;
    }
}
