//! The SQL of [`FunctionStore`](crate::FunctionStore), written once for both databases:
//! SQLite takes `$N` placeholders, `ON CONFLICT` and `RETURNING` too, so only the
//! schemas differ (see `migrations/*/0003_functions.sql`).

use std::borrow::Borrow;

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use crate::backend::{Backend, Statement, Transactional};
use crate::error::StoreError;
use crate::function_model::{NewTask, StubRecord, TaskRecord};
use crate::sql::at_rest;

/// The stub columns, in `StubRow` order.
macro_rules! stub_columns {
    () => {
        "id, workspace_id, name, code_digest, sdk_digest, module_path, function_name, \
         config_json, created_at"
    };
}

/// The task columns, in `TaskRow` order.
macro_rules! task_columns {
    () => {
        "id, workspace_id, stub_id, function_name, state, attempts, container_id, \
         worker_id, message, created_at, started_at, ended_at"
    };
}

/// A task that is not final. Literal rather than bound, and word for word the
/// predicate of the partial index `tasks_unfinished_created_at`: both planners use a
/// partial index only when the query repeats its predicate (a unit test holds the
/// migrations and [`FinalState::ALL`](crate::FinalState::ALL) to this text).
macro_rules! unfinished {
    () => {
        "state NOT IN ('complete', 'error', 'timeout', 'cancelled')"
    };
}

pub(crate) mod attempts;
pub(crate) mod deployments;
pub(crate) mod endpoints;
mod moves;
pub(crate) mod schedules;
pub(crate) use moves::move_tasks;

/// Tasks per INSERT statement. Each binds 5 values, so a statement binds 2,500,
/// far under the limits of Postgres (65,535) and the bundled SQLite (32,766), while
/// thousands of tasks still take only a handful of round trips.
pub(super) const TASKS_PER_INSERT: usize = 500;

/// A `stubs` row.
#[derive(FromRow)]
pub(crate) struct StubRow {
    id: String,
    workspace_id: String,
    name: String,
    code_digest: String,
    sdk_digest: String,
    module_path: String,
    function_name: String,
    config_json: String,
    created_at: DateTime<Utc>,
}

impl StubRow {
    fn into_record(self) -> StubRecord {
        StubRecord {
            id: self.id,
            workspace_id: self.workspace_id,
            name: self.name,
            code_digest: self.code_digest,
            sdk_digest: self.sdk_digest,
            module_path: self.module_path,
            function_name: self.function_name,
            config_json: self.config_json,
            created_at: self.created_at,
        }
    }
}

/// A `tasks` row.
#[derive(FromRow)]
pub(crate) struct TaskRow {
    id: String,
    workspace_id: String,
    stub_id: String,
    function_name: String,
    state: String,
    attempts: i64,
    container_id: String,
    worker_id: String,
    message: String,
    created_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    ended_at: Option<DateTime<Utc>>,
}

impl TaskRow {
    /// The task this row holds; Corrupt if its attempts do not fit a u32 or its
    /// state is none this build knows (the schema keeps both in range, so only a
    /// hand-edited row gets here).
    fn into_record(self) -> Result<TaskRecord, StoreError> {
        let attempts = u32::try_from(self.attempts).map_err(|_| {
            StoreError::Corrupt(format!("task {:?}: attempts {}", self.id, self.attempts))
        })?;
        let state = self
            .state
            .parse()
            .map_err(|e| StoreError::Corrupt(format!("task {:?}: {e}", self.id)))?;
        Ok(TaskRecord {
            id: self.id,
            workspace_id: self.workspace_id,
            stub_id: self.stub_id,
            function_name: self.function_name,
            state,
            attempts,
            container_id: self.container_id,
            worker_id: self.worker_id,
            message: self.message,
            created_at: self.created_at,
            started_at: self.started_at,
            ended_at: self.ended_at,
        })
    }
}

/// `rows` rows of `columns` placeholders each, numbered row by row:
/// `($1, …, $n), ($n+1, …), …`.
fn values_text(rows: usize, columns: usize) -> String {
    let mut text = String::new();
    for row in 0..rows {
        if row > 0 {
            text.push_str(", ");
        }
        text.push('(');
        for column in 1..=columns {
            if column > 1 {
                text.push_str(", ");
            }
            text.push_str(&format!("${}", row * columns + column));
        }
        text.push(')');
    }
    text
}

/// The text of an INSERT of `rows` tasks. The other columns take their
/// defaults (pending, no attempts, empty strings).
fn insert_tasks_text(rows: usize) -> String {
    format!(
        "INSERT INTO tasks (id, workspace_id, stub_id, function_name, created_at) VALUES {}",
        values_text(rows, 5)
    )
}

pub(super) fn task_insert_error(err: sqlx::Error) -> StoreError {
    match err.as_database_error() {
        Some(db) if db.is_unique_violation() => {
            StoreError::AlreadyExists("a task with one of these ids".to_owned())
        }
        _ => StoreError::Database(err),
    }
}

/// Records an object of a workspace; a second put of the same digest changes nothing.
pub(crate) async fn put_object(
    pool: &impl Backend,
    workspace_id: &str,
    digest: &str,
    size: i64,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let insert = Statement::new(
        "INSERT INTO objects (workspace_id, digest, size, created_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (workspace_id, digest) DO NOTHING",
    )
    .bind(workspace_id)
    .bind(digest)
    .bind(size)
    .bind(at_rest(at));
    pool.execute(insert).await?;
    Ok(())
}

/// Whether the workspace holds the object.
pub(crate) async fn has_object(
    pool: &impl Backend,
    workspace_id: &str,
    digest: &str,
) -> Result<bool, StoreError> {
    let select = Statement::new(
        "SELECT EXISTS (SELECT 1 FROM objects WHERE workspace_id = $1 AND digest = $2)",
    )
    .bind(workspace_id)
    .bind(digest);
    let (exists,): (bool,) = pool.fetch_one(select).await?;
    Ok(exists)
}

/// Inserts the stub unless its id is taken, then reads back the stored one.
pub(crate) async fn get_or_create_stub(
    pool: &impl Backend,
    stub: &StubRecord,
) -> Result<StubRecord, StoreError> {
    // No transaction needed: stubs are never updated or deleted, so once the
    // insert has run (or found the id taken) the row is there to read.
    let insert = Statement::new(concat!(
        "INSERT INTO stubs (",
        stub_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING"
    ))
    .bind(stub.id.as_str())
    .bind(stub.workspace_id.as_str())
    .bind(stub.name.as_str())
    .bind(stub.code_digest.as_str())
    .bind(stub.sdk_digest.as_str())
    .bind(stub.module_path.as_str())
    .bind(stub.function_name.as_str())
    .bind(stub.config_json.as_str())
    .bind(at_rest(stub.created_at));
    pool.execute(insert).await?;
    get_stub(pool, &stub.workspace_id, &stub.id)
        .await?
        .ok_or_else(|| {
            StoreError::AlreadyExists(format!("stub with id {:?} in another workspace", stub.id))
        })
}

/// The stub of this workspace with this id.
pub(crate) async fn get_stub(
    pool: &impl Backend,
    workspace_id: &str,
    stub_id: &str,
) -> Result<Option<StubRecord>, StoreError> {
    let select = Statement::new(concat!(
        "SELECT ",
        stub_columns!(),
        " FROM stubs WHERE workspace_id = $1 AND id = $2"
    ))
    .bind(workspace_id)
    .bind(stub_id);
    let row: Option<StubRow> = pool.fetch_optional(select).await?;
    Ok(row.map(StubRow::into_record))
}

/// The workspace's stubs, newest first, at most `limit`.
pub(crate) async fn list_stubs(
    pool: &impl Backend,
    workspace_id: &str,
    limit: u32,
) -> Result<Vec<StubRecord>, StoreError> {
    let select = Statement::new(concat!(
        "SELECT ",
        stub_columns!(),
        " FROM stubs WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
    ))
    .bind(workspace_id)
    .bind(i64::from(limit));
    let rows: Vec<StubRow> = pool.fetch_all(select).await?;
    Ok(rows.into_iter().map(StubRow::into_record).collect())
}

/// Inserts pending tasks as one atomic step, a chunk of rows per statement
/// (a single `.remote()` is one statement, with no BEGIN and COMMIT round
/// trips on its way to the worker).
pub(crate) async fn insert_tasks(
    pool: &impl Transactional,
    tasks: &[NewTask],
) -> Result<(), StoreError> {
    let inserts = tasks
        .chunks(TASKS_PER_INSERT)
        .map(insert_task_chunk)
        .collect();
    pool.execute_atomically(inserts)
        .await
        .map_err(task_insert_error)
}

pub(super) fn insert_task_chunk<T: Borrow<NewTask>>(chunk: &[T]) -> Statement<'_> {
    let mut insert = Statement::new(insert_tasks_text(chunk.len()));
    for task in chunk.iter().map(Borrow::borrow) {
        insert = insert
            .bind(task.id.as_str())
            .bind(task.workspace_id.as_str())
            .bind(task.stub_id.as_str())
            .bind(task.function_name.as_str())
            .bind(at_rest(task.created_at));
    }
    insert
}

/// A task by id, of this workspace when one is given.
pub(crate) async fn get_task(
    pool: &impl Backend,
    workspace_id: Option<&str>,
    task_id: &str,
) -> Result<Option<TaskRecord>, StoreError> {
    let select = match workspace_id {
        Some(workspace_id) => Statement::new(concat!(
            "SELECT ",
            task_columns!(),
            " FROM tasks WHERE id = $1 AND workspace_id = $2"
        ))
        .bind(task_id)
        .bind(workspace_id),
        None => Statement::new(concat!(
            "SELECT ",
            task_columns!(),
            " FROM tasks WHERE id = $1"
        ))
        .bind(task_id),
    };
    let row: Option<TaskRow> = pool.fetch_optional(select).await?;
    row.map(TaskRow::into_record).transpose()
}

/// The workspace's tasks, newest first.
pub(crate) async fn list_tasks(
    pool: &impl Backend,
    workspace_id: &str,
    limit: u32,
) -> Result<Vec<TaskRecord>, StoreError> {
    // The id breaks ties: uuid v7 ids sort by time.
    let select = Statement::new(concat!(
        "SELECT ",
        task_columns!(),
        " FROM tasks WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
    ))
    .bind(workspace_id)
    .bind(i64::from(limit));
    let rows: Vec<TaskRow> = pool.fetch_all(select).await?;
    rows.into_iter().map(TaskRow::into_record).collect()
}

/// Tasks not final, oldest first.
pub(crate) async fn unfinished_tasks(
    pool: &impl Backend,
    limit: u32,
) -> Result<Vec<TaskRecord>, StoreError> {
    let select = Statement::new(concat!(
        "SELECT ",
        task_columns!(),
        " FROM tasks WHERE ",
        unfinished!(),
        " ORDER BY created_at, id LIMIT $1"
    ))
    .bind(i64::from(limit));
    let rows: Vec<TaskRow> = pool.fetch_all(select).await?;
    rows.into_iter().map(TaskRow::into_record).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task_state::{FinalState, TaskState};

    /// The quoted, comma-separated final states, as the SQL lists them.
    fn final_states_list() -> String {
        let quoted: Vec<String> = FinalState::ALL
            .iter()
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        quoted.join(", ")
    }

    #[test]
    fn the_unfinished_predicate_lists_exactly_the_final_states() {
        assert_eq!(
            unfinished!(),
            format!("state NOT IN ({})", final_states_list())
        );
    }

    #[test]
    fn both_schemas_index_unfinished_tasks_with_the_queries_predicate() {
        for schema in [
            include_str!("../migrations/postgres/0003_functions.sql"),
            include_str!("../migrations/sqlite/0003_functions.sql"),
        ] {
            assert!(schema.contains(concat!("WHERE ", unfinished!(), ";")));
            for state in TaskState::ALL {
                assert!(schema.contains(&format!("'{state}'")), "{state} allowed");
            }
        }
    }

    #[test]
    fn a_row_in_an_unknown_state_is_corrupt() {
        let row = TaskRow {
            id: "t-1".into(),
            workspace_id: "w".into(),
            stub_id: "s".into(),
            function_name: "f".into(),
            state: "finished".into(),
            attempts: 1,
            container_id: String::new(),
            worker_id: String::new(),
            message: String::new(),
            created_at: Utc::now(),
            started_at: None,
            ended_at: None,
        };
        let err = row.into_record().unwrap_err();
        assert_eq!(
            err.to_string(),
            "corrupt record: task \"t-1\": unknown task state \"finished\": expected one of \
             pending, running, retry, complete, error, timeout, cancelled"
        );
    }

    #[test]
    fn task_inserts_number_their_placeholders_row_by_row() {
        assert_eq!(
            insert_tasks_text(2),
            "INSERT INTO tasks (id, workspace_id, stub_id, function_name, created_at) \
             VALUES ($1, $2, $3, $4, $5), ($6, $7, $8, $9, $10)"
        );
    }
}
