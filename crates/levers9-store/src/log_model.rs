//! The records of what tasks printed (see [`LogStore`](crate::LogStore)).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

/// The stream of the marker row that says a task's output was cut.
pub const TRUNCATED_STREAM: &str = "levers9";

/// One chunk a task printed, as a worker sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLogChunk {
    /// The task that printed it; its workspace and stub come from its row.
    pub task_id: String,
    /// stdout or stderr.
    pub stream: String,
    /// The bytes, as printed (not necessarily whole lines or valid UTF-8).
    pub data: Vec<u8>,
    /// When the controlplane received it.
    pub at: DateTime<Utc>,
}

/// One stored chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// Increasing in the order chunks were stored: a reader's cursor.
    pub id: i64,
    /// The task that printed it.
    pub task_id: String,
    /// The task's workspace.
    pub workspace_id: String,
    /// The task's stub.
    pub stub_id: String,
    /// stdout, stderr, or [`TRUNCATED_STREAM`].
    pub stream: String,
    /// The bytes as printed, the last chunk kept cut at the task's limit; on a
    /// [`TRUNCATED_STREAM`] row, the notice that says so.
    pub data: Vec<u8>,
    /// When the controlplane received it.
    pub at: DateTime<Utc>,
}

/// Which chunks of a workspace to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogQuery {
    /// The reader's workspace: nothing of another is ever returned.
    pub workspace_id: String,
    /// One task; None for every task of `stub_ids`.
    pub task_id: Option<String>,
    /// With no task: the stubs whose tasks' chunks to read (none reads nothing).
    pub stub_ids: Vec<String>,
    /// Only chunks after this id (a follower's cursor; 0 for all).
    pub after_id: i64,
    /// Only chunks received at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// At most this many chunks.
    pub limit: u32,
    /// The last `limit` chunks rather than the first (still returned oldest first).
    pub tail: bool,
}

/// What one append stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Appended {
    /// Chunks stored, markers included.
    pub stored: u64,
    /// Chunks dropped: their task is unknown, or already over its limit.
    pub dropped: u64,
    /// The workspaces that have new chunks, so their followers can be told.
    pub workspaces: BTreeSet<String>,
}
