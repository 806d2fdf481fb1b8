//! Task transitions, many tasks to a statement: a large map starts and ends
//! thousands of tasks a second, and one UPDATE per task would keep the
//! database busy with round trips and commits rather than with rows.
//!
//! Each UPDATE joins the table to a `VALUES` list (both databases name its
//! columns `column1`, `column2`, …) and changes only tasks that are not final,
//! so a final state is never left.

use chrono::{DateTime, Utc};
use sqlx::{Database, Encode, Executor, FromRow, IntoArguments, Pool, Type};

use super::attempts::{self, REQUEUED, RETRIED};
use super::values_text;
use crate::error::StoreError;
use crate::function_model::{task_state, TaskEnd, TaskStart};
use crate::sql::at_rest;

/// Tasks per UPDATE: 5 values each, far under both databases' limits.
const TASKS_PER_UPDATE: usize = 500;

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
        running = task_state::RUNNING,
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

/// Starts attempts of tasks that are not final (each task at most once);
/// returns how many changed.
pub(crate) async fn start_tasks<DB>(
    pool: &Pool<DB>,
    starts: &[TaskStart],
) -> Result<u64, StoreError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    (String,): for<'r> FromRow<'r, DB::Row>,
{
    if starts.is_empty() {
        return Ok(0);
    }
    const HANDED_BACK: &str = "handed back unfinished: its container or worker went away";
    let mut tx = pool.begin().await?;
    let mut changed = 0;
    for chunk in starts.chunks(TASKS_PER_UPDATE) {
        let text = start_text(chunk.len());
        let mut update = sqlx::query_as::<_, (String,)>(&text);
        for start in chunk {
            update = update
                .bind(start.task_id.as_str())
                .bind(i64::from(start.attempt))
                .bind(start.container_id.as_str())
                .bind(start.worker_id.as_str())
                .bind(at_rest(start.at));
        }
        let started: Vec<(String,)> = update.fetch_all(&mut *tx).await?;
        changed += started.len() as u64;
        let started: Vec<&TaskStart> = chunk
            .iter()
            .filter(|s| started.iter().any(|(id,)| *id == s.task_id))
            .collect();
        let closes: Vec<attempts::AttemptEnd> = started
            .iter()
            .map(|s| (s.task_id.as_str(), s.at, REQUEUED, HANDED_BACK))
            .collect();
        attempts::close(&mut *tx, &closes).await?;
        attempts::insert(&mut *tx, &started).await?;
    }
    tx.commit().await?;
    Ok(changed)
}

/// Ends tasks that are not final (each task at most once); returns how many
/// changed. NotFinalState, changing nothing, if a state is not final.
pub(crate) async fn finish_tasks<DB>(pool: &Pool<DB>, ends: &[TaskEnd]) -> Result<u64, StoreError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    (String,): for<'r> FromRow<'r, DB::Row>,
{
    if let Some(end) = ends.iter().find(|e| !task_state::is_final(&e.state)) {
        return Err(StoreError::NotFinalState(end.state.clone()));
    }
    if ends.is_empty() {
        return Ok(0);
    }
    let mut tx = pool.begin().await?;
    let mut changed = 0;
    for chunk in ends.chunks(TASKS_PER_UPDATE) {
        let text = end_text(chunk.len());
        let mut update = sqlx::query_as::<_, (String,)>(&text);
        for end in chunk {
            update = update
                .bind(end.task_id.as_str())
                .bind(end.state.as_str())
                .bind(end.message.as_str())
                .bind(at_rest(end.at));
        }
        changed += update.fetch_all(&mut *tx).await?.len() as u64;
        let closes: Vec<attempts::AttemptEnd> = chunk
            .iter()
            .map(|e| {
                (
                    e.task_id.as_str(),
                    e.at,
                    e.state.as_str(),
                    e.message.as_str(),
                )
            })
            .collect();
        attempts::close(&mut *tx, &closes).await?;
    }
    tx.commit().await?;
    Ok(changed)
}

/// Sends a task that is not final back for another attempt; true if it changed.
pub(crate) async fn retry_task<DB>(
    pool: &Pool<DB>,
    task_id: &str,
    message: &str,
) -> Result<bool, StoreError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    (String,): for<'r> FromRow<'r, DB::Row>,
{
    let mut tx = pool.begin().await?;
    // RETURNING rather than a row count: the generic QueryResult has no rows_affected().
    let changed: Option<(String,)> = sqlx::query_as(concat!(
        "UPDATE tasks SET state = $2, message = $3 WHERE id = $1 AND ",
        unfinished!(),
        " RETURNING id"
    ))
    .bind(task_id)
    .bind(task_state::RETRY)
    .bind(message)
    .fetch_optional(&mut *tx)
    .await?;
    attempts::close(&mut *tx, &[(task_id, Utc::now(), RETRIED, message)]).await?;
    tx.commit().await?;
    Ok(changed.is_some())
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
