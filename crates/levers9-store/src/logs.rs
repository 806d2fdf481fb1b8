//! What tasks printed, kept after their caller has gone (`levers9 logs`).
//! The controlplane appends in batches off the call's path; each task keeps
//! at most a fixed number of bytes, then one marker row; old rows are swept.

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use crate::error::StoreError;
use crate::log_model::{Appended, LogQuery, LogRecord, NewLogChunk, TRUNCATED_STREAM};
use crate::postgres::PostgresStore;
use crate::sql::at_rest;
use crate::sqlite::SqliteStore;

/// The durable output of tasks.
#[async_trait::async_trait]
pub trait LogStore: Send + Sync + 'static {
    /// Stores `chunks` in order, each under its task's workspace and stub,
    /// in one transaction. A task keeps at most `max_bytes_per_task` bytes:
    /// the chunk that crosses the limit is cut there and followed by one
    /// marker chunk on [`TRUNCATED_STREAM`]; later chunks are dropped, as
    /// are chunks of a task the store does not know.
    async fn append_logs(
        &self,
        chunks: &[NewLogChunk],
        max_bytes_per_task: u64,
    ) -> Result<Appended, StoreError>;

    /// The chunks `query` selects, oldest first.
    async fn list_logs(&self, query: &LogQuery) -> Result<Vec<LogRecord>, StoreError>;

    /// Deletes the chunks received before `before`; how many went.
    async fn delete_logs_before(&self, before: DateTime<Utc>) -> Result<u64, StoreError>;
}

/// The log columns, in `LogRow` order.
const LOG_COLUMNS: &str = "id, task_id, workspace_id, stub_id, stream, data, created_at";

#[derive(FromRow)]
struct LogRow {
    id: i64,
    task_id: String,
    workspace_id: String,
    stub_id: String,
    stream: String,
    data: Vec<u8>,
    created_at: DateTime<Utc>,
}

impl From<LogRow> for LogRecord {
    fn from(row: LogRow) -> Self {
        LogRecord {
            id: row.id,
            task_id: row.task_id,
            workspace_id: row.workspace_id,
            stub_id: row.stub_id,
            stream: row.stream,
            data: row.data,
            at: row.created_at,
        }
    }
}

/// The marker that ends a task's kept output.
fn truncation_marker(max_bytes_per_task: u64) -> Vec<u8> {
    format!("[levers9: output truncated: only the first {max_bytes_per_task} bytes of a task are kept]\n")
        .into_bytes()
}

/// What to store of a chunk given the bytes its task already keeps: the
/// part under the limit, and whether the marker follows it.
fn kept_part(data: &[u8], kept: u64, max: u64) -> Option<(&[u8], bool)> {
    if kept >= max {
        return None;
    }
    let room = usize::try_from(max - kept).unwrap_or(usize::MAX);
    if data.len() <= room {
        Some((data, false))
    } else {
        Some((&data[..room], true))
    }
}

/// The WHERE clause of `query` from placeholder `$2` on (`$1` is the workspace).
fn log_filter(query: &LogQuery) -> String {
    let mut filter = String::from("workspace_id = $1 AND id > $2 AND created_at >= $3");
    match &query.task_id {
        Some(_) => filter.push_str(" AND task_id = $4"),
        None => {
            let stubs: Vec<String> = (0..query.stub_ids.len())
                .map(|i| format!("${}", i + 4))
                .collect();
            if stubs.is_empty() {
                filter.push_str(" AND FALSE");
            } else {
                filter.push_str(&format!(" AND stub_id IN ({})", stubs.join(", ")));
            }
        }
    }
    filter
}

/// Implements [`LogStore`] over a reader and a writer pool (the same pool
/// on Postgres); the statements are the same on both.
macro_rules! log_store_impl {
    ($store:ty, $reader:ident, $writer:ident) => {
        #[async_trait::async_trait]
        impl LogStore for $store {
            async fn append_logs(
                &self,
                chunks: &[NewLogChunk],
                max_bytes_per_task: u64,
            ) -> Result<Appended, StoreError> {
                let mut tx = self.$writer.begin().await?;
                let mut kept: std::collections::HashMap<&str, u64> = Default::default();
                let mut appended = Appended::default();
                for chunk in chunks {
                    let task = chunk.task_id.as_str();
                    let so_far = match kept.get(task) {
                        Some(bytes) => *bytes,
                        None => {
                            let bytes: i64 = sqlx::query_scalar(
                                "SELECT COALESCE(SUM(length(data)), 0) FROM task_logs \
                                 WHERE task_id = $1",
                            )
                            .bind(task)
                            .fetch_one(&mut *tx)
                            .await?;
                            u64::try_from(bytes).unwrap_or(0)
                        }
                    };
                    let Some((part, cut)) = kept_part(&chunk.data, so_far, max_bytes_per_task)
                    else {
                        appended.dropped += 1;
                        continue;
                    };
                    let marker = truncation_marker(max_bytes_per_task);
                    let mut rows = vec![(chunk.stream.as_str(), part)];
                    if cut {
                        rows.push((TRUNCATED_STREAM, marker.as_slice()));
                    }
                    for (stream, data) in rows {
                        let workspace: Option<String> = sqlx::query_scalar(
                            "INSERT INTO task_logs \
                             (task_id, workspace_id, stub_id, stream, data, created_at) \
                             SELECT id, workspace_id, stub_id, $2, $3, $4 FROM tasks \
                             WHERE id = $1 RETURNING workspace_id",
                        )
                        .bind(task)
                        .bind(stream)
                        .bind(data)
                        .bind(at_rest(chunk.at))
                        .fetch_optional(&mut *tx)
                        .await?;
                        let Some(workspace) = workspace else {
                            appended.dropped += 1;
                            break;
                        };
                        appended.workspaces.insert(workspace);
                        appended.stored += 1;
                    }
                    // Once cut, the task is at its limit: nothing more is kept.
                    let now_kept = if cut {
                        max_bytes_per_task
                    } else {
                        so_far + part.len() as u64
                    };
                    kept.insert(task, now_kept);
                }
                tx.commit().await?;
                Ok(appended)
            }

            async fn list_logs(&self, query: &LogQuery) -> Result<Vec<LogRecord>, StoreError> {
                let order = if query.tail { "DESC" } else { "ASC" };
                let sql = format!(
                    "SELECT {LOG_COLUMNS} FROM task_logs WHERE {} ORDER BY id {order} LIMIT {}",
                    log_filter(query),
                    query.limit
                );
                let since = query.since.unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
                let mut select = sqlx::query_as::<_, LogRow>(&sql)
                    .bind(query.workspace_id.as_str())
                    .bind(query.after_id)
                    .bind(at_rest(since));
                match &query.task_id {
                    Some(task) => select = select.bind(task.as_str()),
                    None => {
                        for stub in &query.stub_ids {
                            select = select.bind(stub.as_str());
                        }
                    }
                }
                let mut records: Vec<LogRecord> = select
                    .fetch_all(&self.$reader)
                    .await?
                    .into_iter()
                    .map(LogRecord::from)
                    .collect();
                if query.tail {
                    records.reverse();
                }
                Ok(records)
            }

            async fn delete_logs_before(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
                let done = sqlx::query("DELETE FROM task_logs WHERE created_at < $1")
                    .bind(at_rest(before))
                    .execute(&self.$writer)
                    .await?;
                Ok(done.rows_affected())
            }
        }
    };
}

log_store_impl!(PostgresStore, pool, pool);
log_store_impl!(SqliteStore, reader, writer);

#[cfg(test)]
mod tests {
    use super::kept_part;

    #[test]
    fn a_chunk_that_crosses_the_limit_is_cut_there() {
        assert_eq!(kept_part(b"abcdef", 0, 10), Some((&b"abcdef"[..], false)));
        assert_eq!(kept_part(b"abcdef", 6, 10), Some((&b"abcd"[..], true)));
        assert_eq!(kept_part(b"abcdef", 10, 10), None);
    }
}
