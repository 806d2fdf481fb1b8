//! `levers9 task`: the calls of your functions.

use anyhow::Result;
use clap::Subcommand;
use levers9_api::v1::{
    AttemptOutcome, CancelTaskRequest, GetTaskRequest, ListTasksRequest, Task, TaskState,
};
use levers9_api::Words;

use crate::output;

/// Task commands.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// List your recent tasks, newest first.
    List {
        /// How many, at most (up to 1000).
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Show one task: its state, container and why it failed, then each
    /// attempt with its worker and how it ended.
    Show {
        /// Task id.
        id: String,
    },
    /// Cancel a task that has not finished (its container is stopped if
    /// it is running).
    Cancel {
        /// Task id.
        id: String,
    },
}

/// Runs a task command.
pub async fn run(command: TaskCommand, context: Option<&str>) -> Result<()> {
    let client = super::connect(context).await?;
    let mut tasks = client.functions();
    match command {
        TaskCommand::List { limit } => {
            let list = tasks
                .list_tasks(ListTasksRequest { limit })
                .await?
                .into_inner()
                .tasks;
            let rows: Vec<Vec<String>> = list
                .into_iter()
                .map(|t| {
                    vec![
                        t.task_id,
                        t.function_name,
                        TaskState::word_of(t.state),
                        t.attempts.to_string(),
                        t.created_at,
                        output::or_dash(&t.ended_at),
                    ]
                })
                .collect();
            output::table(
                &["ID", "FUNCTION", "STATE", "ATTEMPTS", "CREATED", "ENDED"],
                &rows,
            );
        }
        TaskCommand::Show { id } => {
            let shown = tasks
                .get_task(GetTaskRequest { task_id: id })
                .await?
                .into_inner();
            show(&shown.task.unwrap_or_default());
            if !shown.attempts.is_empty() {
                println!();
                let rows: Vec<Vec<String>> = shown
                    .attempts
                    .into_iter()
                    .map(|a| {
                        vec![
                            a.attempt.to_string(),
                            a.worker_id,
                            a.container_id,
                            a.started_at,
                            output::or_dash(&a.ended_at),
                            output::or_dash(&AttemptOutcome::word_of(a.outcome)),
                            output::or_dash(&a.message),
                        ]
                    })
                    .collect();
                output::table(
                    &[
                        "ATTEMPT",
                        "WORKER",
                        "CONTAINER",
                        "STARTED",
                        "ENDED",
                        "OUTCOME",
                        "REASON",
                    ],
                    &rows,
                );
            }
        }
        TaskCommand::Cancel { id } => {
            let task = tasks
                .cancel_task(CancelTaskRequest { task_id: id })
                .await?
                .into_inner()
                .task
                .unwrap_or_default();
            eprintln!(
                "Task {} is {}",
                task.task_id,
                TaskState::word_of(task.state)
            );
        }
    }
    Ok(())
}

fn show(task: &Task) {
    let state = TaskState::word_of(task.state);
    let fields = [
        ("ID", &task.task_id),
        ("FUNCTION", &task.function_name),
        ("STUB", &task.stub_id),
        ("STATE", &state),
        ("ATTEMPTS", &task.attempts.to_string()),
        ("CONTAINER", &task.container_id),
        ("WORKER", &task.worker_id),
        ("CREATED", &task.created_at),
        ("STARTED", &task.started_at),
        ("ENDED", &task.ended_at),
        ("MESSAGE", &task.message),
    ];
    for (name, value) in fields {
        println!("{name:<10} {}", output::or_dash(value));
    }
}
