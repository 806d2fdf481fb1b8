//! The `task_attempts` rows, written in the same transactions as the task
//! transitions they follow, many to a statement like those.

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use super::values_text;
use crate::backend::{Backend, Statement};
use crate::error::StoreError;
use crate::function_model::{AttemptRecord, TaskEnd, TaskStart};
use crate::sql::at_rest;
use crate::task_state::AttemptOutcome;

/// An attempt's end: task, when, outcome, message.
pub(crate) type AttemptEnd<'a> = (&'a str, DateTime<Utc>, AttemptOutcome, &'a str);

pub(crate) fn close_text(rows: usize) -> String {
    format!(
        "UPDATE task_attempts SET ended_at = v.column2, outcome = v.column3, \
         message = v.column4 FROM (VALUES {}) AS v \
         WHERE task_attempts.task_id = v.column1 AND task_attempts.ended_at IS NULL",
        values_text(rows, 4)
    )
}

pub(crate) fn insert_text(rows: usize) -> String {
    format!(
        "INSERT INTO task_attempts (task_id, attempt, container_id, worker_id, started_at, \
         ended_at, outcome, message) VALUES {} ON CONFLICT DO NOTHING",
        values_text(rows, 8)
    )
}

/// Ends the open attempt of each task in `ends`.
pub(crate) async fn close(tx: &impl Backend, ends: &[AttemptEnd<'_>]) -> Result<(), StoreError> {
    if ends.is_empty() {
        return Ok(());
    }
    let mut update = Statement::new(close_text(ends.len()));
    for (task_id, at, outcome, message) in ends {
        update = update
            .bind(*task_id)
            .bind(at_rest(*at))
            .bind(outcome.as_str())
            .bind(*message);
    }
    tx.execute(update).await?;
    Ok(())
}

/// An attempt to record: its start, and its end when it started and ended
/// in one batch (it is then recorded closed).
pub(crate) type NewAttempt<'a> = (&'a TaskStart, Option<&'a TaskEnd>);

/// Records attempts, open or (with an end) closed.
pub(crate) async fn insert(tx: &impl Backend, rows: &[NewAttempt<'_>]) -> Result<(), StoreError> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut insert = Statement::new(insert_text(rows.len()));
    for (start, end) in rows {
        insert = insert
            .bind(start.task_id.as_str())
            .bind(i64::from(start.attempt))
            .bind(start.container_id.as_str())
            .bind(start.worker_id.as_str())
            .bind(at_rest(start.at))
            .bind(end.map(|e| at_rest(e.at)))
            .bind(end.map_or("", |e| AttemptOutcome::Ended(e.state).as_str()))
            .bind(end.map_or("", |e| e.message.as_str()));
    }
    tx.execute(insert).await?;
    Ok(())
}

/// A `task_attempts` row.
#[derive(FromRow)]
pub(crate) struct AttemptRow {
    attempt: i64,
    container_id: String,
    worker_id: String,
    started_at: DateTime<Utc>,
    ended_at: Option<DateTime<Utc>>,
    outcome: String,
    message: String,
}

/// The attempts of a task, oldest first; Corrupt for an outcome this build
/// does not know.
pub(crate) async fn list(
    pool: &impl Backend,
    task_id: &str,
) -> Result<Vec<AttemptRecord>, StoreError> {
    let select = Statement::new(
        "SELECT attempt, container_id, worker_id, started_at, ended_at, outcome, message \
         FROM task_attempts WHERE task_id = $1 ORDER BY started_at, attempt",
    )
    .bind(task_id);
    let rows: Vec<AttemptRow> = pool.fetch_all(select).await?;
    rows.into_iter()
        .map(|r| {
            Ok(AttemptRecord {
                attempt: u32::try_from(r.attempt).map_err(|_| {
                    StoreError::Corrupt(format!("task {task_id:?}: attempt {}", r.attempt))
                })?,
                container_id: r.container_id,
                worker_id: r.worker_id,
                started_at: r.started_at,
                ended_at: r.ended_at,
                // Empty while the attempt runs (the column's default).
                outcome: match r.outcome.as_str() {
                    "" => None,
                    text => Some(text.parse().map_err(|e| {
                        StoreError::Corrupt(format!("task {task_id:?}: attempt {}: {e}", r.attempt))
                    })?),
                },
                message: r.message,
            })
        })
        .collect()
}
