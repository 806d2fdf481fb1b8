//! Task transitions, many tasks to a statement: a large map starts and ends
//! thousands of tasks a second, and one UPDATE per task would keep the
//! database busy with round trips and commits rather than with rows.
//!
//! Each UPDATE joins the table to a `VALUES` list (both databases name its
//! columns `column1`, `column2`, …) and changes only tasks that are not final,
//! so a final state is never left.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::{Database, Encode, Executor, FromRow, IntoArguments, Pool, Type};

use super::attempts::{self, NewAttempt};
use super::values_text;
use crate::error::StoreError;
use crate::function_model::{TaskEnd, TaskMoves, TaskRetry, TasksMoved};
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

/// Applies `moves` in one transaction: its starts, then its retries and
/// requeues, then its ends, each only to tasks that are not final.
///
/// A task that starts and ends here with no retry between (a short call)
/// is written once: its row updated to both, its attempt inserted closed.
pub(crate) async fn move_tasks<DB>(
    pool: &Pool<DB>,
    moves: &TaskMoves<'_>,
) -> Result<TasksMoved, StoreError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    for<'q> Option<DateTime<Utc>>: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    (String,): for<'r> FromRow<'r, DB::Row>,
{
    let mut moved = TasksMoved::default();
    if moves.starts.is_empty()
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
    let ending: HashMap<&str, &TaskEnd> = moves
        .ends
        .iter()
        .filter(|e| !retried.contains(e.task_id.as_str()))
        .map(|e| (e.task_id.as_str(), e))
        .collect();
    let (runs, starts): (Vec<NewAttempt>, Vec<NewAttempt>) = moves
        .starts
        .iter()
        .map(|s| (s, ending.get(s.task_id.as_str()).copied()))
        .partition(|(_, end)| end.is_some());
    let ran: HashSet<&str> = runs.iter().map(|(s, _)| s.task_id.as_str()).collect();
    let ends: Vec<&TaskEnd> = moves
        .ends
        .iter()
        .filter(|e| !ran.contains(e.task_id.as_str()))
        .collect();

    let mut tx = pool.begin().await?;
    for chunk in runs.chunks(TASKS_PER_UPDATE) {
        let changed = start_chunk(&mut *tx, chunk).await?;
        moved.started += changed;
        moved.ended += changed;
    }
    for chunk in starts.chunks(TASKS_PER_UPDATE) {
        moved.started += start_chunk(&mut *tx, chunk).await?;
    }
    for retry in moves.retries {
        moved.retried += u64::from(
            back::<DB>(&mut *tx, retry, TaskState::Retry, AttemptOutcome::Retried).await?,
        );
    }
    for requeue in moves.requeues {
        moved.requeued += u64::from(
            back::<DB>(&mut *tx, requeue, TaskState::Pending, AttemptOutcome::Lost).await?,
        );
    }
    for chunk in ends.chunks(TASKS_PER_UPDATE) {
        moved.ended += end_chunk(&mut *tx, chunk).await?;
    }
    tx.commit().await?;
    Ok(moved)
}

/// Sends a task back to `state` with the retry's message and closes its
/// open attempt with `outcome`; true if the task was not final.
async fn back<DB>(
    conn: &mut DB::Connection,
    retry: &TaskRetry<'_>,
    state: TaskState,
    outcome: AttemptOutcome,
) -> Result<bool, StoreError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    (String,): for<'r> FromRow<'r, DB::Row>,
{
    // RETURNING rather than a row count: the generic QueryResult has no rows_affected().
    let changed: Option<(String,)> = sqlx::query_as(concat!(
        "UPDATE tasks SET state = $2, message = $3 WHERE id = $1 AND ",
        unfinished!(),
        " RETURNING id"
    ))
    .bind(retry.task_id)
    .bind(state.as_str())
    .bind(retry.message)
    .fetch_optional(&mut *conn)
    .await?;
    let close = (retry.task_id, Utc::now(), outcome, retry.message);
    attempts::close(&mut *conn, &[close]).await?;
    Ok(changed.is_some())
}

/// Starts the chunk's tasks, and ends those whose row carries an end too
/// (every row of a chunk does, or none): their attempts go in closed.
async fn start_chunk<DB>(
    conn: &mut DB::Connection,
    chunk: &[NewAttempt<'_>],
) -> Result<u64, StoreError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    for<'q> Option<DateTime<Utc>>: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    (String,): for<'r> FromRow<'r, DB::Row>,
{
    let ending = chunk.first().is_some_and(|(_, end)| end.is_some());
    let text = if ending {
        run_text(chunk.len())
    } else {
        start_text(chunk.len())
    };
    let mut update = sqlx::query_as::<_, (String,)>(&text);
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
    let changed: Vec<(String,)> = update.fetch_all(&mut *conn).await?;
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
    attempts::close(&mut *conn, &closes).await?;
    attempts::insert(&mut *conn, &moved).await?;
    Ok(changed.len() as u64)
}

async fn end_chunk<DB>(conn: &mut DB::Connection, chunk: &[&TaskEnd]) -> Result<u64, StoreError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    (String,): for<'r> FromRow<'r, DB::Row>,
{
    let text = end_text(chunk.len());
    let mut update = sqlx::query_as::<_, (String,)>(&text);
    for end in chunk {
        update = update
            .bind(end.task_id.as_str())
            .bind(end.state.as_str())
            .bind(end.message.as_str())
            .bind(at_rest(end.at));
    }
    let changed = update.fetch_all(&mut *conn).await?.len() as u64;
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
    attempts::close(&mut *conn, &closes).await?;
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
