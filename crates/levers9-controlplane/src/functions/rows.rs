//! The dispatcher's writes to task rows, gathered into batches.
//!
//! Starting and ending tasks is off every caller's path (callers follow the
//! hot state), so the dispatcher queues these writes and one task applies
//! them, as many as have gathered per statement: a map of thousands of
//! inputs costs a few statements a second rather than two per input.
//!
//! Per task the writes keep their order. A batch applies its starts, then
//! its retries, then its ends, so it holds at most one start per task and
//! no start after that task's retry: such a start begins the next batch.
//! Every attempt is written and closed with its own outcome (a retried
//! attempt says why), and a final state is never left whatever the order.

use std::collections::HashSet;
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
        for batch in Batch::split(std::mem::take(&mut writes)) {
            batch.apply(store.as_ref()).await;
        }
    }
}

/// One batch of writes, ordered per task.
#[derive(Default)]
struct Batch {
    starts: Vec<TaskStart>,
    retries: Vec<(String, String)>,
    ends: Vec<TaskEnd>,
    waiting: Vec<oneshot::Sender<Result<(), String>>>,
    /// Tasks with a start or a retry in this batch.
    touched: HashSet<String>,
    /// Tasks with an end in this batch.
    ended: HashSet<String>,
}

impl Batch {
    /// `writes` cut into batches, in order; one only unless a task starts
    /// again after its start or retry in the same run of writes.
    fn split(writes: Vec<Write>) -> Vec<Batch> {
        let mut batches = vec![Batch::default()];
        for write in writes {
            let starts_again = matches!(&write, Write::Start(s) if batches.last().is_some_and(|b| b.touched.contains(&s.task_id)));
            if starts_again {
                batches.push(Batch::default());
            }
            if let Some(batch) = batches.last_mut() {
                batch.add(write);
            }
        }
        batches
    }

    fn add(&mut self, write: Write) {
        match write {
            Write::Start(start) => {
                self.touched.insert(start.task_id.clone());
                self.starts.push(start);
            }
            Write::Retry { task_id, message } => {
                self.touched.insert(task_id.clone());
                self.retries.push((task_id, message));
            }
            Write::End { end, done } => {
                // The first end is the one that counts: a final state is
                // never left.
                if self.ended.insert(end.task_id.clone()) {
                    self.ends.push(end);
                }
                self.waiting.push(done);
            }
        }
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

    fn starts(batch: &Batch) -> Vec<(&str, u32)> {
        batch
            .starts
            .iter()
            .map(|s| (s.task_id.as_str(), s.attempt))
            .collect()
    }

    #[test]
    fn a_start_after_its_tasks_retry_begins_the_next_batch() {
        let batches = Batch::split(vec![
            start("a", 1),
            retry("a"),
            start("b", 1),
            start("a", 2),
            retry("b"),
            end("c", "complete"),
            end("c", "cancelled"),
        ]);
        assert_eq!(batches.len(), 2);
        assert_eq!(starts(&batches[0]), [("a", 1), ("b", 1)]);
        let retried: Vec<&str> = batches[0].retries.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(retried, ["a"], "attempt 1 of a is closed as retried");
        assert_eq!(starts(&batches[1]), [("a", 2)]);
        let retried: Vec<&str> = batches[1].retries.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(retried, ["b"]);
        assert_eq!(batches[1].ends.len(), 1);
        assert_eq!(batches[1].ends[0].state, "complete");
        assert_eq!(batches[1].waiting.len(), 2, "both enders hear back");
    }

    #[test]
    fn a_retry_then_the_next_start_are_two_batches() {
        let batches = Batch::split(vec![retry("a"), start("a", 2), end("a", "error")]);
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0].retries.len(), 1);
        assert!(batches[0].starts.is_empty());
        assert_eq!(starts(&batches[1]), [("a", 2)]);
        assert_eq!(batches[1].ends.len(), 1);
    }
}
