//! The dispatcher's writes to task rows, gathered into batches.
//!
//! Starting and ending tasks is off every caller's path (callers follow the
//! hot state), so the dispatcher queues these writes and one task applies
//! them, as many as have gathered per statement: a map of thousands of
//! inputs costs a few statements a second rather than two per input.
//!
//! Per task the writes keep their order: in one batch the latest start of
//! each task goes first, then the retries that came after a task's latest
//! start, then the ends; a final state is never left whatever the order.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::Utc;
use levers9_store::{FunctionStore, TaskEnd, TaskStart};
use tokio::sync::{mpsc, oneshot};

use crate::error::ApiError;

/// Writes applied per batch, at most.
const BATCH: usize = 2_000;

enum Write {
    Start(TaskStart),
    Retry {
        task_id: String,
        message: String,
    },
    End {
        end: TaskEnd,
        done: oneshot::Sender<Result<(), String>>,
    },
}

/// Where the dispatcher queues its writes.
#[derive(Clone)]
pub struct RowWriter {
    tx: mpsc::UnboundedSender<Write>,
}

impl RowWriter {
    /// A writer to `store`, applying writes until every clone is dropped.
    pub fn spawn(store: Arc<dyn FunctionStore>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(apply(store, rx));
        Self { tx }
    }

    /// An attempt started.
    pub fn start(&self, task_id: &str, attempt: u32, container_id: &str, worker_id: &str) {
        self.send(Write::Start(TaskStart {
            task_id: task_id.to_owned(),
            attempt,
            container_id: container_id.to_owned(),
            worker_id: worker_id.to_owned(),
            at: Utc::now(),
        }));
    }

    /// A task goes back for another attempt.
    pub fn retry(&self, task_id: &str, message: &str) {
        self.send(Write::Retry {
            task_id: task_id.to_owned(),
            message: message.to_owned(),
        });
    }

    /// A task ended; returns once its row says so.
    pub async fn end(&self, task_id: &str, state: &str, message: &str) -> Result<(), ApiError> {
        let (done, written) = oneshot::channel();
        self.send(Write::End {
            end: TaskEnd {
                task_id: task_id.to_owned(),
                state: state.to_owned(),
                message: message.to_owned(),
                at: Utc::now(),
            },
            done,
        });
        match written.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(ApiError::Unavailable(format!(
                "cannot record the end of task {task_id}: {error}"
            ))),
            Err(_) => Err(ApiError::Unavailable(
                "the controlplane is stopping; the task's end was not recorded".into(),
            )),
        }
    }

    fn send(&self, write: Write) {
        // The receiver lives as long as any writer: sending cannot fail.
        let _ = self.tx.send(write);
    }
}

async fn apply(store: Arc<dyn FunctionStore>, mut rx: mpsc::UnboundedReceiver<Write>) {
    let mut writes = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut writes, BATCH).await > 0 {
        let batch = Batch::of(std::mem::take(&mut writes));
        batch.apply(store.as_ref()).await;
    }
}

/// One batch of writes, ordered per task.
#[derive(Default)]
struct Batch {
    starts: Vec<TaskStart>,
    retries: Vec<(String, String)>,
    ends: Vec<TaskEnd>,
    waiting: Vec<oneshot::Sender<Result<(), String>>>,
}

impl Batch {
    fn of(writes: Vec<Write>) -> Self {
        // Per task: its latest start, and whether a retry followed it.
        let mut started: HashMap<String, usize> = HashMap::new();
        let mut retried: HashMap<String, String> = HashMap::new();
        let mut ended: HashSet<String> = HashSet::new();
        let mut batch = Batch::default();
        for write in writes {
            match write {
                Write::Start(start) => {
                    retried.remove(&start.task_id);
                    match started.get(&start.task_id) {
                        Some(&at) => batch.starts[at] = start,
                        None => {
                            started.insert(start.task_id.clone(), batch.starts.len());
                            batch.starts.push(start);
                        }
                    }
                }
                Write::Retry { task_id, message } => {
                    retried.insert(task_id, message);
                }
                Write::End { end, done } => {
                    // The first end is the one that counts: a final state
                    // is never left.
                    if ended.insert(end.task_id.clone()) {
                        batch.ends.push(end);
                    }
                    batch.waiting.push(done);
                }
            }
        }
        batch.retries = retried.into_iter().collect();
        batch
    }

    async fn apply(self, store: &dyn FunctionStore) {
        let mut failure = None;
        if let Err(error) = store.start_tasks(&self.starts).await {
            tracing::warn!(%error, tasks = self.starts.len(), "cannot mark tasks running");
        }
        for (task_id, message) in &self.retries {
            if let Err(error) = store.retry_task(task_id, message).await {
                tracing::warn!(%error, %task_id, "cannot mark a task for retry");
            }
        }
        if let Err(error) = store.finish_tasks(&self.ends).await {
            tracing::error!(%error, tasks = self.ends.len(), "cannot record the end of tasks");
            failure = Some(error.to_string());
        }
        for done in self.waiting {
            let _ = done.send(failure.clone().map_or(Ok(()), Err));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(task_id: &str, attempt: u32) -> Write {
        Write::Start(TaskStart {
            task_id: task_id.into(),
            attempt,
            container_id: format!("c{attempt}"),
            worker_id: "w".into(),
            at: Utc::now(),
        })
    }

    fn retry(task_id: &str) -> Write {
        Write::Retry {
            task_id: task_id.into(),
            message: "again".into(),
        }
    }

    fn end(task_id: &str, state: &str) -> Write {
        Write::End {
            end: TaskEnd {
                task_id: task_id.into(),
                state: state.into(),
                message: String::new(),
                at: Utc::now(),
            },
            done: oneshot::channel().0,
        }
    }

    #[test]
    fn a_batch_keeps_each_tasks_latest_start_its_later_retry_and_first_end() {
        let batch = Batch::of(vec![
            start("a", 1),
            retry("a"),
            start("a", 2),
            start("b", 1),
            retry("b"),
            end("c", "complete"),
            end("c", "cancelled"),
        ]);
        let starts: Vec<(&str, u32)> = batch
            .starts
            .iter()
            .map(|s| (s.task_id.as_str(), s.attempt))
            .collect();
        assert_eq!(starts, [("a", 2), ("b", 1)]);
        let retried: Vec<&str> = batch.retries.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(retried, ["b"], "a started again after its retry");
        assert_eq!(batch.ends.len(), 1);
        assert_eq!(batch.ends[0].state, "complete");
        assert_eq!(batch.waiting.len(), 2, "both enders hear back");
    }
}
