//! What the supervisor tells the controlplane of its containers: their
//! events (an exit, with its code and whether the kernel's OOM killer
//! ended it) and their output, numbered in order.

use levers9_api::v1::{
    worker_message, ContainerEvent, ContainerEventState, LogChunk, WorkerMessage,
};
use levers9_ids::ContainerId;
use levers9_runtime::{Exit, Stream};
use tokio::sync::mpsc;

pub(super) fn event(container_id: &ContainerId, state: ContainerEventState) -> ContainerEvent {
    ContainerEvent {
        container_id: container_id.to_string(),
        state: state.into(),
        ..Default::default()
    }
}

pub(super) fn message(kind: worker_message::Kind) -> WorkerMessage {
    WorkerMessage { kind: Some(kind) }
}

pub(super) fn exited(container_id: &ContainerId, exit: Exit) -> ContainerEvent {
    let (exit_code, oom_killed) = match exit {
        Exit::Code(code) => (code, false),
        Exit::Signal(signal) => (128 + signal, false),
        Exit::OomKilled => (137, true),
    };
    ContainerEvent {
        exit_code,
        oom_killed,
        message: if oom_killed {
            "killed by the kernel's OOM killer: the container used more memory than its limit"
                .into()
        } else {
            String::new()
        },
        ..event(container_id, ContainerEventState::Exited)
    }
}

/// Sends the container's output, history then live, numbered from 1.
pub(super) async fn forward_output(
    container_id: ContainerId,
    logs: levers9_runtime::LogHandle,
    events: mpsc::Sender<WorkerMessage>,
) {
    let (history, mut live) = logs.subscribe();
    let mut seq = 0;
    let mut send = |chunk: levers9_runtime::LogChunk| {
        seq += 1;
        message(worker_message::Kind::Log(LogChunk {
            container_id: container_id.to_string(),
            stream: match chunk.stream {
                Stream::Stdout => "stdout",
                Stream::Stderr => "stderr",
            }
            .to_owned(),
            data: chunk.data,
            seq,
        }))
    };
    for chunk in history {
        if events.send(send(chunk)).await.is_err() {
            return;
        }
    }
    loop {
        match live.recv().await {
            Ok(chunk) => {
                if events.send(send(chunk)).await.is_err() {
                    return;
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(skipped)) => {
                tracing::warn!(%container_id, skipped, "output came faster than it could be sent; some was dropped");
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}
