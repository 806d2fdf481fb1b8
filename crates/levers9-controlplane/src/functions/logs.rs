//! Keeps what tasks print (`levers9 logs`): the worker streams hand each
//! output chunk to [`TaskLogs::record`], which never waits; one background
//! writer per replica stores them in batches in the record store (waiting
//! [`LINGER`] after a batch that was not full, to gather the next), tells
//! followers on the hot-state channel `task-logs:<workspace>` that their
//! workspace has new lines, and sweeps lines past the retention age.
//!
//! # Guarantees
//! - A burst of output never slows a call or its worker's stream: chunks go
//!   to a bounded queue; when the writer is that far behind, new chunks are
//!   dropped and counted, with a warning, rather than held in memory.
//! - Each task keeps at most [`MAX_BYTES_PER_TASK`], then one marker line.
//! - Lines older than [`RETENTION`] are deleted, by every replica (the
//!   delete is idempotent), once per [`SWEEP_EVERY`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use levers9_api::v1::TaskOutput;
use levers9_state::HotState;
use levers9_store::{LogStore, NewLogChunk};
use tokio::sync::mpsc;

/// What one task keeps: enough for any log a person reads, small enough
/// that a task printing in a loop cannot fill the database.
pub const MAX_BYTES_PER_TASK: u64 = 1 << 20;
/// How long lines are kept (tasks themselves have no retention yet).
pub const RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);
/// How often a replica deletes lines past [`RETENTION`].
const SWEEP_EVERY: Duration = Duration::from_secs(3600);
/// Chunks waiting for the writer. At the worker's chunk size this bounds
/// the memory a replica spends on output it has not stored yet.
const QUEUE_CHUNKS: usize = 4096;
/// Chunks per store transaction.
const BATCH_CHUNKS: usize = 512;
/// After a batch that was not full, the writer waits this long for more:
/// a trickle of output (one line per call) then costs the database one
/// transaction per linger, not one per line, and the calls' own database
/// work does not share the machine with a transaction per line.
const LINGER: Duration = Duration::from_millis(50);

/// The channel that says a workspace has new lines.
pub fn channel(workspace_id: &str) -> String {
    format!("task-logs:{workspace_id}")
}

/// The replica's handle on its log writer; cheap to clone.
#[derive(Clone, Default)]
pub struct TaskLogs {
    /// None: output is not kept (a fleet built without a store, in tests).
    queue: Option<mpsc::Sender<NewLogChunk>>,
    dropped: Arc<AtomicU64>,
}

impl TaskLogs {
    /// Starts the writer and the sweep; they stop when the last handle goes.
    pub fn start(store: Arc<dyn LogStore>, state: Arc<dyn HotState>) -> Self {
        let (queue, chunks) = mpsc::channel(QUEUE_CHUNKS);
        tokio::spawn(write(chunks, store, state));
        Self {
            queue: Some(queue),
            dropped: Arc::default(),
        }
    }

    /// Queues a chunk a task printed; never waits.
    pub fn record(&self, output: &TaskOutput) {
        let Some(queue) = &self.queue else { return };
        let chunk = NewLogChunk {
            task_id: output.task_id.clone(),
            stream: output.stream.clone(),
            data: output.data.clone(),
            at: Utc::now(),
        };
        if queue.try_send(chunk).is_err() {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            // Warn on the first drop and then once per thousand, not per chunk.
            if dropped % 1000 == 1 {
                tracing::warn!(
                    dropped,
                    "task output is arriving faster than the record store takes it: \
                     chunks are dropped from `levers9 logs` (callers still get them)"
                );
            }
        }
    }
}

/// The writer: takes what is queued, stores it as one batch, tells the
/// followers; sweeps on the side. Ends when every handle is dropped.
async fn write(
    mut chunks: mpsc::Receiver<NewLogChunk>,
    store: Arc<dyn LogStore>,
    state: Arc<dyn HotState>,
) {
    let mut sweep = tokio::time::interval(SWEEP_EVERY);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut batch = Vec::with_capacity(BATCH_CHUNKS);
    loop {
        tokio::select! {
            received = chunks.recv_many(&mut batch, BATCH_CHUNKS) => {
                if received == 0 {
                    return;
                }
                store_batch(store.as_ref(), state.as_ref(), &batch).await;
                batch.clear();
                if received < BATCH_CHUNKS {
                    tokio::time::sleep(LINGER).await;
                }
            }
            _ = sweep.tick() => sweep_old(store.as_ref()).await,
        }
    }
}

async fn store_batch(store: &dyn LogStore, state: &dyn HotState, batch: &[NewLogChunk]) {
    let appended = match store.append_logs(batch, MAX_BYTES_PER_TASK).await {
        Ok(appended) => appended,
        Err(error) => {
            tracing::warn!(%error, chunks = batch.len(), "cannot store task output: dropped");
            return;
        }
    };
    for workspace in &appended.workspaces {
        if let Err(error) = state.publish(&channel(workspace), b"").await {
            tracing::debug!(%error, "cannot tell log followers of new lines");
        }
    }
}

async fn sweep_old(store: &dyn LogStore) {
    let Ok(age) = chrono::Duration::from_std(RETENTION) else {
        return;
    };
    match store.delete_logs_before(Utc::now() - age).await {
        Ok(0) => {}
        Ok(deleted) => tracing::info!(deleted, "swept task output past its retention"),
        Err(error) => tracing::warn!(%error, "cannot sweep old task output"),
    }
}
