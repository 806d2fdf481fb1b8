//! Keeps what tasks print (`levers9 logs`): the worker streams hand each
//! output chunk to [`TaskLogs::record`], which never waits; one background
//! writer per replica stores them in batches in the record store (waiting
//! [`LINGER`] after a batch that was not full, to gather the next), tells
//! followers on the hot-state channel `task-logs:<workspace>` that their
//! workspace has new lines, and sweeps lines past the retention age.
//!
//! # Guarantees
//! - A burst of output never slows a call or its worker's stream: chunks go
//!   to a queue bounded in chunks and bytes; when the writer is that far
//!   behind, new chunks are dropped and counted, with a warning, rather
//!   than held in memory.
//! - Each task keeps at most [`MAX_BYTES_PER_TASK`], then one marker line.
//! - Lines older than [`RETENTION`] are deleted, by every replica (the
//!   delete is idempotent), once per [`SWEEP_EVERY`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use levers9_api::v1::TaskOutput;
use levers9_state::{keys, HotState};
use levers9_store::{LogStore, NewLogChunk};
use tokio::sync::mpsc;

/// What one task keeps: enough for any log a person reads, small enough
/// that a task printing in a loop cannot fill the database.
pub const MAX_BYTES_PER_TASK: u64 = 1 << 20;
/// How long lines are kept (tasks themselves have no retention yet).
pub const RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);
/// How often a replica deletes lines past [`RETENTION`].
const SWEEP_EVERY: Duration = Duration::from_secs(3600);
/// Chunks waiting for the writer, at most.
const QUEUE_CHUNKS: usize = 4096;
/// Bytes waiting for the writer, at most: the memory a replica spends on
/// output it has not stored yet (a worker's chunk may be up to 1 MiB).
const QUEUE_BYTES: u64 = 64 << 20;
/// Chunks per store transaction.
const BATCH_CHUNKS: usize = 512;
/// After a batch that was not full, the writer waits this long for more:
/// a trickle of output (one line per call) then costs the database one
/// transaction per linger, not one per line, and the calls' own database
/// work does not share the machine with a transaction per line.
const LINGER: Duration = Duration::from_millis(50);

/// The replica's handle on its log writer; cheap to clone.
#[derive(Clone, Default)]
pub struct TaskLogs {
    /// None: output is not kept (a fleet built without a store, in tests).
    queue: Option<mpsc::Sender<NewLogChunk>>,
    /// Bytes queued and not yet taken by the writer.
    queued: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
}

impl TaskLogs {
    /// Starts the writer and the sweep; they stop when the last handle goes.
    pub fn start(store: Arc<dyn LogStore>, state: Arc<dyn HotState>) -> Self {
        let (queue, chunks) = mpsc::channel(QUEUE_CHUNKS);
        let queued = Arc::new(AtomicU64::new(0));
        tokio::spawn(write(chunks, queued.clone(), store, state));
        Self {
            queue: Some(queue),
            queued,
            dropped: Arc::default(),
        }
    }

    /// Queues a chunk a task printed; never waits.
    pub fn record(&self, output: &TaskOutput) {
        let Some(queue) = &self.queue else { return };
        let bytes = output.data.len() as u64;
        // Counted before the copy, so a chunk that cannot be queued costs no copy.
        let over = self.queued.fetch_add(bytes, Ordering::Relaxed) + bytes > QUEUE_BYTES;
        let queued = !over
            && queue
                .try_send(NewLogChunk {
                    task_id: output.task_id.clone(),
                    stream: output.stream.clone(),
                    data: output.data.clone(),
                    at: Utc::now(),
                })
                .is_ok();
        if !queued {
            self.queued.fetch_sub(bytes, Ordering::Relaxed);
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
    queued: Arc<AtomicU64>,
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
                let bytes: u64 = batch.iter().map(|c| c.data.len() as u64).sum();
                queued.fetch_sub(bytes, Ordering::Relaxed);
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
        if let Err(error) = state.publish(&keys::task_logs(workspace), b"").await {
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

#[cfg(test)]
mod tests {
    use super::*;
    use levers9_state::MemoryState;
    use levers9_store::{Appended, LogQuery, LogRecord, StoreError};

    /// A store that never answers: the writer is stuck on its first batch.
    struct Stuck;

    #[async_trait::async_trait]
    impl LogStore for Stuck {
        async fn append_logs(&self, _: &[NewLogChunk], _: u64) -> Result<Appended, StoreError> {
            std::future::pending().await
        }
        async fn list_logs(&self, _: &LogQuery) -> Result<Vec<LogRecord>, StoreError> {
            Ok(Vec::new())
        }
        async fn delete_logs_before(&self, _: chrono::DateTime<Utc>) -> Result<u64, StoreError> {
            Ok(0)
        }
    }

    #[tokio::test]
    async fn output_beyond_the_queue_is_dropped_and_counted_not_held() {
        let logs = TaskLogs::start(Arc::new(Stuck), Arc::new(MemoryState::new()));
        let chunk = TaskOutput {
            task_id: "t".into(),
            stream: "stdout".into(),
            data: vec![b'x'; 1 << 20],
            ..Default::default()
        };
        for _ in 0..200 {
            logs.record(&chunk);
        }
        // Nothing awaited, so the writer (on this test's one thread) took
        // nothing: exactly 64 MiB are held and the rest was dropped.
        assert_eq!(logs.queued.load(Ordering::Relaxed), QUEUE_BYTES);
        assert_eq!(logs.dropped.load(Ordering::Relaxed), 200 - 64);
    }
}
