//! Task transitions, many tasks to a statement: a large map starts and ends
//! thousands of tasks a second, and one UPDATE per task would keep the
//! database busy with round trips and commits rather than with rows.
//!
//! Each UPDATE joins the table to a `VALUES` list (both databases name its
//! columns `column1`, `column2`, …) and changes only tasks that are not final,
//! so a final state is never left.

use std::collections::{HashMap, HashSet};

use chrono::Utc;

use super::attempts::{self, NewAttempt};
use super::{insert_task_chunk, task_insert_error, values_text, TASKS_PER_INSERT};
use crate::backend::{Backend, Statement, Transactional};
use crate::error::StoreError;
use crate::function_model::{NewTask, TaskEnd, TaskMoves, TaskRetry, TaskStart, TasksMoved};
use crate::sql::at_rest;
use crate::task_state::{AttemptOutcome, TaskState};

/// Tasks per UPDATE: 8 values each at most, far under both databases'
/// limits.
const TASKS_PER_UPDATE: usize = 500;
/// Why an attempt left open was closed by the next start of its task.
const HANDED_BACK: &str = "handed back unfinished: its container or worker went away";

fn start_text(rows: usize) -> String {
    format!(
        concat!(
            "UPDATE tasks SET state = '{running}', attempts = v.column2, ",
            "container_id = v.column3, worker_id = v.column4, ",
            "started_at = COALESCE(started_at, v.column5) FROM (VALUES {values}) AS v ",
            "WHERE id = v.column1 AND ",
            unfinished!(),
            " RETURNING id"
        ),
        running = TaskState::Running.as_str(),
        values = values_text(rows, 5)
    )
}

fn end_text(rows: usize) -> String {
    format!(
        concat!(
            "UPDATE tasks SET state = v.column2, message = v.column3, ended_at = v.column4 ",
            "FROM (VALUES {values}) AS v WHERE id = v.column1 AND ",
            unfinished!(),
            " RETURNING id"
        ),
        values = values_text(rows, 4)
    )
}

/// A start and an end of one task at once: 8 values a row.
fn run_text(rows: usize) -> String {
    format!(
        concat!(
            "UPDATE tasks SET state = v.column6, attempts = v.column2, ",
            "container_id = v.column3, worker_id = v.column4, ",
            "started_at = COALESCE(started_at, v.column5), message = v.column7, ",
            "ended_at = v.column8 FROM (VALUES {values}) AS v WHERE id = v.column1 AND ",
            unfinished!(),
            " RETURNING id"
        ),
        values = values_text(rows, 8)
    )
}

/// A new task inserted with its start, and its end when it has one: 12
/// values a row.
fn insert_started_text(rows: usize) -> String {
    format!(
        "INSERT INTO tasks (id, workspace_id, stub_id, function_name, created_at, state, \
         attempts, container_id, worker_id, started_at, message, ended_at) VALUES {}",
        values_text(rows, 12)
    )
}

/// Applies `moves` in one transaction: its new tasks, then its starts,
/// then its retries and requeues, then its ends, each only to tasks that
/// are not final.
///
/// A task that starts and ends here with no retry between (a short call)
/// is written once: its row updated to both, its attempt inserted closed.
/// A new task that starts here with no retry is inserted as it stands after
/// the move (running, or ended): a warm call's or a map input's row is one
/// INSERT, never an INSERT and an UPDATE of the same row.
pub(crate) async fn move_tasks(
    pool: &impl Transactional,
    moves: &TaskMoves<'_>,
) -> Result<TasksMoved, StoreError> {
    let mut moved = TasksMoved::default();
    if moves.inserts.is_empty()
        && moves.starts.is_empty()
        && moves.retries.is_empty()
        && moves.requeues.is_empty()
        && moves.ends.is_empty()
    {
        return Ok(moved);
    }
    let retried: HashSet<&str> = moves
        .retries
        .iter()
        .chain(moves.requeues)
        .map(|r| r.task_id)
        .collect();
    let ending = not_retried(moves.ends, |e| &e.task_id, &retried);
    let starting = not_retried(moves.starts, |s| &s.task_id, &retried);
    let mut born: Vec<NewRun> = Vec::new();
    let mut inserts: Vec<&NewTask> = Vec::new();
    for task in moves.inserts {
        match starting.get(task.id.as_str()) {
            Some(start) => born.push((task, start, ending.get(task.id.as_str()).copied())),
            None => inserts.push(task),
        }
    }
    let born_ids: HashSet<&str> = born.iter().map(|(task, _, _)| task.id.as_str()).collect();
    let (runs, starts): (Vec<NewAttempt>, Vec<NewAttempt>) = moves
        .starts
        .iter()
        .filter(|s| !born_ids.contains(s.task_id.as_str()))
        .map(|s| (s, ending.get(s.task_id.as_str()).copied()))
        .partition(|(_, end)| end.is_some());
    let ran: HashSet<&str> = runs
        .iter()
        .map(|(s, _)| s.task_id.as_str())
        .chain(born_ids.iter().copied())
        .collect();
    let ends: Vec<&TaskEnd> = moves
        .ends
        .iter()
        .filter(|e| !ran.contains(e.task_id.as_str()))
        .collect();

    let tx = pool.begin().await?;
    for chunk in inserts.chunks(TASKS_PER_INSERT) {
        tx.execute(insert_task_chunk(chunk))
            .await
            .map_err(task_insert_error)?;
        moved.inserted += chunk.len() as u64;
    }
    for chunk in born.chunks(TASKS_PER_INSERT) {
        insert_started(&tx, chunk).await?;
        let rows = chunk.len() as u64;
        moved.inserted += rows;
        moved.started += rows;
        moved.ended += chunk.iter().filter(|(_, _, end)| end.is_some()).count() as u64;
    }
    for chunk in runs.chunks(TASKS_PER_UPDATE) {
        let changed = start_chunk(&tx, chunk).await?;
        moved.started += changed;
        moved.ended += changed;
    }
    for chunk in starts.chunks(TASKS_PER_UPDATE) {
        moved.started += start_chunk(&tx, chunk).await?;
    }
    for retry in moves.retries {
        moved.retried +=
            u64::from(back(&tx, retry, TaskState::Retry, AttemptOutcome::Retried).await?);
    }
    for requeue in moves.requeues {
        moved.requeued +=
            u64::from(back(&tx, requeue, TaskState::Pending, AttemptOutcome::Lost).await?);
    }
    for chunk in ends.chunks(TASKS_PER_UPDATE) {
        moved.ended += end_chunk(&tx, chunk).await?;
    }
    pool.commit(tx).await?;
    Ok(moved)
}

/// `items` by their task's id, but for the tasks in `retried`.
fn not_retried<'a, T>(
    items: &'a [T],
    task_id: impl Fn(&T) -> &String,
    retried: &HashSet<&str>,
) -> HashMap<&'a str, &'a T> {
    items
        .iter()
        .map(|item| (task_id(item).as_str(), item))
        .filter(|(id, _)| !retried.contains(id))
        .collect()
}

/// A new task that starts in the same move, its start, and its end when it
/// ends there too.
type NewRun<'a> = (&'a NewTask, &'a TaskStart, Option<&'a TaskEnd>);

/// Inserts new tasks that started as they stand after their start and
/// end, with their attempts.
async fn insert_started(tx: &impl Backend, chunk: &[NewRun<'_>]) -> Result<(), StoreError> {
    let mut insert = Statement::new(insert_started_text(chunk.len()));
    let mut attempts = Vec::with_capacity(chunk.len());
    for (task, start, end) in chunk {
        insert = insert
            .bind(task.id.as_str())
            .bind(task.workspace_id.as_str())
            .bind(task.stub_id.as_str())
            .bind(task.function_name.as_str())
            .bind(at_rest(task.created_at))
            .bind(end.map_or(TaskState::Running.as_str(), |e| e.state.as_str()))
            .bind(i64::from(start.attempt))
            .bind(start.container_id.as_str())
            .bind(start.worker_id.as_str())
            .bind(at_rest(start.at))
            .bind(end.map_or("", |e| e.message.as_str()))
            .bind(end.map(|e| at_rest(e.at)));
        attempts.push((*start, *end));
    }
    tx.execute(insert).await.map_err(task_insert_error)?;
    attempts::insert(tx, &attempts).await
}

/// Sends a task back to `state` with the retry's message and closes its
/// open attempt with `outcome`; true if the task was not final.
async fn back(
    tx: &impl Backend,
    retry: &TaskRetry<'_>,
    state: TaskState,
    outcome: AttemptOutcome,
) -> Result<bool, StoreError> {
    // RETURNING rather than a row count: Backend::execute reports none.
    let update = Statement::new(concat!(
        "UPDATE tasks SET state = $2, message = $3 WHERE id = $1 AND ",
        unfinished!(),
        " RETURNING id"
    ))
    .bind(retry.task_id)
    .bind(state.as_str())
    .bind(retry.message);
    let changed: Option<(String,)> = tx.fetch_optional(update).await?;
    let close = (retry.task_id, Utc::now(), outcome, retry.message);
    attempts::close(tx, &[close]).await?;
    Ok(changed.is_some())
}

/// Starts the chunk's tasks, and ends those whose row carries an end too
/// (every row of a chunk does, or none): their attempts go in closed.
async fn start_chunk(tx: &impl Backend, chunk: &[NewAttempt<'_>]) -> Result<u64, StoreError> {
    let ending = chunk.first().is_some_and(|(_, end)| end.is_some());
    let text = if ending {
        run_text(chunk.len())
    } else {
        start_text(chunk.len())
    };
    let mut update = Statement::new(text);
    for (start, end) in chunk {
        update = update
            .bind(start.task_id.as_str())
            .bind(i64::from(start.attempt))
            .bind(start.container_id.as_str())
            .bind(start.worker_id.as_str())
            .bind(at_rest(start.at));
        if let Some(end) = end {
            update = update
                .bind(end.state.as_str())
                .bind(end.message.as_str())
                .bind(at_rest(end.at));
        }
    }
    let changed: Vec<(String,)> = tx.fetch_all(update).await?;
    let changed: HashSet<&str> = changed.iter().map(|(id,)| id.as_str()).collect();
    let moved: Vec<NewAttempt> = chunk
        .iter()
        .filter(|(s, _)| changed.contains(s.task_id.as_str()))
        .copied()
        .collect();
    let closes: Vec<attempts::AttemptEnd> = moved
        .iter()
        .map(|(s, _)| {
            (
                s.task_id.as_str(),
                s.at,
                AttemptOutcome::Requeued,
                HANDED_BACK,
            )
        })
        .collect();
    attempts::close(tx, &closes).await?;
    attempts::insert(tx, &moved).await?;
    Ok(changed.len() as u64)
}

async fn end_chunk(tx: &impl Backend, chunk: &[&TaskEnd]) -> Result<u64, StoreError> {
    let mut update = Statement::new(end_text(chunk.len()));
    for end in chunk {
        update = update
            .bind(end.task_id.as_str())
            .bind(end.state.as_str())
            .bind(end.message.as_str())
            .bind(at_rest(end.at));
    }
    let changed = tx.fetch_all::<(String,)>(update).await?.len() as u64;
    let closes: Vec<attempts::AttemptEnd> = chunk
        .iter()
        .map(|e| {
            (
                e.task_id.as_str(),
                e.at,
                AttemptOutcome::Ended(e.state),
                e.message.as_str(),
            )
        })
        .collect();
    attempts::close(tx, &closes).await?;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_join_a_values_list_numbered_row_by_row() {
        assert_eq!(
            end_text(2),
            "UPDATE tasks SET state = v.column2, message = v.column3, ended_at = v.column4 \
             FROM (VALUES ($1, $2, $3, $4), ($5, $6, $7, $8)) AS v WHERE id = v.column1 AND \
             state NOT IN ('complete', 'error', 'timeout', 'cancelled') RETURNING id"
        );
        assert!(start_text(1).contains("FROM (VALUES ($1, $2, $3, $4, $5)) AS v"));
    }
}
