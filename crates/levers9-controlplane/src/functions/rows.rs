//! The dispatcher's writes to task rows, gathered into batches.
//!
//! Starting and ending tasks is off every caller's path (callers follow the
//! hot state), so the dispatcher queues these writes and one task applies
//! them, as many as have gathered per statement: a map of thousands of
//! inputs costs a few statements a second rather than two per input. A
//! batch is one transaction, and a batch waits a moment to gather
//! more (see [`gather`]), so a short call's start and end are one.
//!
//! Per task the writes keep their order. A batch applies its starts, then
//! its retries and requeues, then its ends, so it holds at most one start
//! per task and no start after that task's retry or requeue: such a start
//! begins the next batch.
//! Every attempt is written and closed with its own outcome (a retried
//! attempt says why), and a final state is never left whatever the order.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use levers9_store::{FinalState, FunctionStore, NewTask, TaskEnd, TaskMoves, TaskRetry, TaskStart};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::functions::FunctionError;

/// Writes applied per batch, at most.
const BATCH: usize = 2_000;
/// How long starts wait for an end to share their transaction, at most.
const START_HOLD: Duration = Duration::from_millis(20);
/// How long an end waits for more writes to share its transaction.
const END_HOLD: Duration = Duration::from_millis(5);

enum Write {
    /// Rows of tasks submitted in this process, written before their start.
    Insert(Vec<NewTask>),
    Start(TaskStart),
    Retry {
        task_id: String,
        message: String,
    },
    /// Lost with its worker: pending again, no attempt used.
    Requeue {
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

    /// Tasks submitted here whose rows the dispatcher writes, batched with
    /// their starts (see `submit::RowBy::Start`).
    pub fn insert(&self, rows: Vec<NewTask>) {
        if !rows.is_empty() {
            self.send(Write::Insert(rows));
        }
    }

    /// An attempt started, written without waiting: batched with other writes,
    /// and held a moment for its task's end so a short call's start and end
    /// share one transaction.
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

    /// A task's attempt was lost with its worker: it waits again to run
    /// under the same attempt number, and its attempt says why.
    pub fn requeue(&self, task_id: &str, message: &str) {
        self.send(Write::Requeue {
            task_id: task_id.to_owned(),
            message: message.to_owned(),
        });
    }

    /// A task ended; returns once its row says so.
    pub async fn end(
        &self,
        task_id: &str,
        state: FinalState,
        message: &str,
    ) -> Result<(), FunctionError> {
        let (done, written) = oneshot::channel();
        self.send(Write::End {
            end: TaskEnd {
                task_id: task_id.to_owned(),
                state,
                message: message.to_owned(),
                at: Utc::now(),
            },
            done,
        });
        match written.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(FunctionError::EndNotRecorded {
                task_id: task_id.to_owned(),
                detail: error,
            }),
            Err(_) => Err(FunctionError::Stopping),
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
        gather(&mut rx, &mut writes).await;
        for batch in Batch::split(std::mem::take(&mut writes)) {
            batch.apply(store.as_ref()).await;
        }
    }
}

/// Waits a moment for more writes to join `writes` (at least one): starts
/// up to [`START_HOLD`] for an end, so a short task's start and end share
/// one transaction, and ends [`END_HOLD`] for more of their kind, so a map
/// writes many rows per transaction.
async fn gather(rx: &mut mpsc::UnboundedReceiver<Write>, writes: &mut Vec<Write>) {
    let is_end = |w: &Write| matches!(w, Write::End { .. });
    let mut deadline = Instant::now() + START_HOLD;
    let mut ending = writes.iter().any(is_end);
    if ending {
        deadline = Instant::now() + END_HOLD;
    }
    while writes.len() < BATCH {
        let seen = writes.len();
        let room = BATCH - seen;
        let more = rx.recv_many(writes, room);
        if !matches!(tokio::time::timeout_at(deadline, more).await, Ok(n) if n > 0) {
            return;
        }
        if !ending && writes[seen..].iter().any(is_end) {
            ending = true;
            deadline = deadline.min(Instant::now() + END_HOLD);
        }
    }
}

/// One batch of writes, ordered per task.
#[derive(Default)]
struct Batch {
    inserts: Vec<NewTask>,
    starts: Vec<TaskStart>,
    retries: Vec<(String, String)>,
    requeues: Vec<(String, String)>,
    ends: Vec<TaskEnd>,
    waiting: Vec<oneshot::Sender<Result<(), String>>>,
    /// Tasks with a start, a retry or a requeue in this batch.
    touched: HashSet<String>,
    /// Tasks with an end in this batch.
    ended: HashSet<String>,
}

impl Batch {
    /// `writes` cut into batches, in order; one only unless a task starts
    /// again after its start, retry or requeue in the same run of writes.
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
            Write::Insert(rows) => self.inserts.extend(rows),
            Write::Start(start) => {
                self.touched.insert(start.task_id.clone());
                self.starts.push(start);
            }
            Write::Retry { task_id, message } => {
                self.touched.insert(task_id.clone());
                self.retries.push((task_id, message));
            }
            Write::Requeue { task_id, message } => {
                self.touched.insert(task_id.clone());
                self.requeues.push((task_id, message));
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
        let (retries, requeues) = (backs(&self.retries), backs(&self.requeues));
        let moves = TaskMoves {
            inserts: &self.inserts,
            starts: &self.starts,
            retries: &retries,
            requeues: &requeues,
            ends: &self.ends,
        };
        let failure = match store.move_tasks(&moves).await {
            Ok(_) => None,
            Err(error) => {
                tracing::error!(
                    %error,
                    inserts = self.inserts.len(),
                    starts = self.starts.len(),
                    retries = retries.len(),
                    requeues = requeues.len(),
                    ends = self.ends.len(),
                    "cannot record task starts and ends"
                );
                Some(error.to_string())
            }
        };
        for done in self.waiting {
            let _ = done.send(failure.clone().map_or(Ok(()), Err));
        }
    }
}

/// (task, message) pairs as the store takes them.
fn backs(list: &[(String, String)]) -> Vec<TaskRetry<'_>> {
    list.iter()
        .map(|(task_id, message)| TaskRetry { task_id, message })
        .collect()
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

    fn end(task_id: &str, state: FinalState) -> Write {
        Write::End {
            end: TaskEnd {
                task_id: task_id.into(),
                state,
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
            end("c", FinalState::Complete),
            end("c", FinalState::Cancelled),
        ]);
        assert_eq!(batches.len(), 2);
        assert_eq!(starts(&batches[0]), [("a", 1), ("b", 1)]);
        let retried: Vec<&str> = batches[0].retries.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(retried, ["a"], "attempt 1 of a is closed as retried");
        assert_eq!(starts(&batches[1]), [("a", 2)]);
        let retried: Vec<&str> = batches[1].retries.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(retried, ["b"]);
        assert_eq!(batches[1].ends.len(), 1);
        assert_eq!(batches[1].ends[0].state, FinalState::Complete);
        assert_eq!(batches[1].waiting.len(), 2, "both enders hear back");
    }

    #[test]
    fn a_requeue_then_the_next_start_are_two_batches() {
        let requeue = Write::Requeue {
            task_id: "a".into(),
            message: "its worker was lost".into(),
        };
        let batches = Batch::split(vec![start("a", 1), requeue, start("a", 1)]);
        assert_eq!(batches.len(), 2);
        assert_eq!(starts(&batches[0]), [("a", 1)]);
        assert_eq!(batches[0].requeues.len(), 1);
        assert_eq!(starts(&batches[1]), [("a", 1)]);
        assert!(batches[1].requeues.is_empty());
    }

    #[test]
    fn a_retry_then_the_next_start_are_two_batches() {
        let batches = Batch::split(vec![retry("a"), start("a", 2), end("a", FinalState::Error)]);
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0].retries.len(), 1);
        assert!(batches[0].starts.is_empty());
        assert_eq!(starts(&batches[1]), [("a", 2)]);
        assert_eq!(batches[1].ends.len(), 1);
    }
}
