//! Execs on the worker's stream (see `services/container/exec.rs`): the
//! worker's output goes to each exec's channel in the hot state, in the
//! order the worker sent it; when the stream closes, the execs it carried
//! are told the worker went away.

use levers9_api::v1::{
    controlplane_message, exec_input, exec_output, ControlplaneMessage, ExecExit, ExecOutput,
};
use levers9_state::keys;
use prost::Message;

use super::StreamState;
use crate::fleet::{Fleet, FleetError};

/// Notes an exec started on this stream.
pub(super) fn note_sent<T>(stream: &StreamState<T>, message: &ControlplaneMessage) {
    if let Some(controlplane_message::Kind::ExecInput(input)) = &message.kind {
        if let Some(exec_input::Kind::Start(_)) = input.kind {
            stream.execs.lock().insert(input.exec_id.clone(), ());
        }
    }
}

/// Publishes a worker's output of an exec to the exec's caller.
pub(super) async fn forward<T>(
    fleet: &Fleet,
    stream: &StreamState<T>,
    output: ExecOutput,
) -> Result<(), FleetError> {
    if let Some(exec_output::Kind::Exit(_)) = output.kind {
        stream.execs.lock().remove(&output.exec_id);
    }
    fleet
        .state
        .publish(&keys::exec_output(&output.exec_id), &output.encode_to_vec())
        .await?;
    Ok(())
}

/// Ends the execs of a stream that closed: their worker went away.
pub(super) async fn worker_gone<T>(fleet: &Fleet, worker_id: &str, stream: &StreamState<T>) {
    let open: Vec<String> = stream.execs.lock().drain().map(|(id, _)| id).collect();
    for exec_id in open {
        let exit = ExecOutput {
            exec_id: exec_id.clone(),
            kind: Some(exec_output::Kind::Exit(ExecExit {
                exit_code: -1,
                error: format!("worker {worker_id} went away"),
                not_running: false,
            })),
        };
        if let Err(error) = fleet
            .state
            .publish(&keys::exec_output(&exec_id), &exit.encode_to_vec())
            .await
        {
            tracing::warn!(%error, %exec_id, "cannot tell an exec its worker went away");
        }
    }
}
