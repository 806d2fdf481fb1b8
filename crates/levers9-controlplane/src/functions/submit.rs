//! A task's way into the system and its end as callers read it: the rows
//! and inputs of submitted tasks, and the final outcome of one that ended.

use levers9_api::v1::{FinalTaskState, TaskOutcome};
use levers9_store::{FunctionStore, NewTask, StubRecord};

use super::{DispatchEvent, TaskState, Ticket};
use crate::functions::FunctionError;
use crate::wire_states;

/// A new task's id.
pub(crate) fn new_task_id() -> String {
    format!("t-{}", uuid::Uuid::now_v7().simple())
}

/// When a submitted task's row is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowBy {
    /// Before the submit returns: its caller gets the task's id, and may
    /// look it up, follow it or cancel it at once.
    Submit,
    /// By the dispatcher, in the batch that starts the task, when the
    /// dispatcher runs in this process: the caller follows the task on its
    /// own stream and never by id, so a warm call writes its row in one
    /// transaction (insert, start and end) and no database round trip
    /// comes before its input is on its way. Elsewhere, as `Submit`.
    Start,
}

/// Stores tasks of `stub` for inputs (inputs in `tasks`, rows in `store`
/// as `row_by` says) and tells the dispatcher; the tickets say where
/// their events go.
pub(crate) async fn submit(
    store: &dyn FunctionStore,
    tasks: &TaskState,
    stub: &StubRecord,
    inputs: Vec<(Ticket, Vec<u8>)>,
    row_by: RowBy,
) -> Result<(), FunctionError> {
    let now = chrono::Utc::now();
    let rows: Vec<NewTask> = inputs
        .iter()
        .map(|(ticket, _)| NewTask {
            id: ticket.task_id.clone(),
            workspace_id: stub.workspace_id.clone(),
            stub_id: stub.id.clone(),
            function_name: stub.function_name.clone(),
            created_at: now,
        })
        .collect();
    let puts = futures::future::join_all(
        inputs
            .iter()
            .map(|(ticket, payload)| tasks.put_input(ticket, payload)),
    );
    let insert = async {
        match row_by {
            RowBy::Submit => store.insert_tasks(&rows).await,
            RowBy::Start => Ok(()),
        }
    };
    // Neither needs the other: the dispatcher hears of the tasks only
    // once both are done.
    let (inserted, put) = futures::join!(insert, puts);
    inserted?;
    for result in put {
        result?;
    }
    let mut event = DispatchEvent::Submitted {
        workspace_id: stub.workspace_id.clone(),
        stub_id: stub.id.clone(),
        tasks: inputs.into_iter().map(|(ticket, _)| ticket).collect(),
        rows: match row_by {
            RowBy::Submit => Vec::new(),
            RowBy::Start => rows,
        },
    };
    if row_by == RowBy::Start {
        let Err(returned) = tasks.tell_here(event) else {
            return Ok(());
        };
        event = returned;
        // No dispatcher here: the rows first, as for any caller.
        if let DispatchEvent::Submitted { rows, .. } = &mut event {
            store.insert_tasks(&std::mem::take(rows)).await?;
        }
    }
    Ok(tasks.tell(&event).await?)
}

/// The final outcome of a task that ended as `end` says (the notice of
/// its end, or its row): the stored one with the payload, or `end`
/// itself once that expired.
pub(crate) async fn final_outcome(
    tasks: &TaskState,
    end: &TaskOutcome,
) -> Result<TaskOutcome, FunctionError> {
    let outcome = tasks.outcome(&end.task_id).await?;
    Ok(match outcome {
        Some(mut outcome) if wire_states::final_state_from_wire(outcome.state()).is_some() => {
            outcome.index = end.index;
            outcome
        }
        _ if end.state() == FinalTaskState::Complete => TaskOutcome {
            index: end.index,
            task_id: end.task_id.clone(),
            state: FinalTaskState::Error.into(),
            message: "the task completed, but its result expired: results are kept for \
                      controlplane.taskResultTtlSeconds"
                .into(),
            ..TaskOutcome::default()
        },
        _ => end.clone(),
    })
}
