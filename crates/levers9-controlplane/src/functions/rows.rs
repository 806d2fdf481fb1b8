//! The dispatcher's writes to task rows, gathered into batches.
//!
//! Starting and ending tasks is off every caller's path (callers follow the
//! hot state), so the dispatcher queues these writes and one task applies
//! them, as many as have gathered per statement: a map of thousands of
//! inputs costs a few statements a second rather than two per input. A
//! batch is one transaction, and a batch waits a moment to gather
//! more (see [`gather`]), so a short call's start and end are one.
//!
//! A new task's row (`submit::RowBy::Start`) is held until its task's
//! first write, and goes in that write's batch: a task that starts and ends
//! in one batch is one INSERT of its final row, and a map input's row is
//! inserted running rather than inserted pending and then updated. A row
//! whose task has no write within [`ROW_HOLD`] is written pending. A batch
//! that fails for a dropped connection is written again (see [`RETRY_FIRST`]).
//!
//! Per task the writes keep their order. A batch applies its starts, then
//! its retries and requeues, then its ends, so it holds at most one start
//! per task and no start after that task's retry or requeue: such a start
//! begins the next batch.
//! Every attempt is written and closed with its own outcome (a retried
//! attempt says why), and a final state is never left whatever the order.

use std::collections::{HashMap, HashSet, VecDeque};
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
/// How long a new task's row waits for its task's first write, at most: a
/// task still queued then (no container free) is listed pending, late by
/// no more than this.
const ROW_HOLD: Duration = Duration::from_secs(2);
/// The first pause before a batch is written again after a transient
/// failure (a connection the database dropped as it restarted): doubled
/// each time up to [`RETRY_LAST`], about 6 s in all, the writes behind it
/// waiting their turn.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_LAST: Duration = Duration::from_millis(3_200);

enum Write {
    /// Rows of tasks submitted in this process, held until their task's
    /// first write (see [`ROW_HOLD`]).
    Insert(Vec<NewTask>),
    /// A write to one task's row.
    Task(TaskWrite),
}

enum TaskWrite {
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

impl TaskWrite {
    fn task_id(&self) -> &str {
        match self {
            TaskWrite::Start(start) => &start.task_id,
            TaskWrite::Retry { task_id, .. } | TaskWrite::Requeue { task_id, .. } => task_id,
            TaskWrite::End { end, .. } => &end.task_id,
        }
    }
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
        self.send(Write::Task(TaskWrite::Start(TaskStart {
            task_id: task_id.to_owned(),
            attempt,
            container_id: container_id.to_owned(),
            worker_id: worker_id.to_owned(),
            at: Utc::now(),
        })));
    }

    /// A task goes back for another attempt.
    pub fn retry(&self, task_id: &str, message: &str) {
        self.send(Write::Task(TaskWrite::Retry {
            task_id: task_id.to_owned(),
            message: message.to_owned(),
        }));
    }

    /// A task's attempt was lost with its worker: it waits again to run
    /// under the same attempt number, and its attempt says why.
    pub fn requeue(&self, task_id: &str, message: &str) {
        self.send(Write::Task(TaskWrite::Requeue {
            task_id: task_id.to_owned(),
            message: message.to_owned(),
        }));
    }

    /// A task ended; returns once its row says so.
    pub async fn end(
        &self,
        task_id: &str,
        state: FinalState,
        message: &str,
    ) -> Result<(), FunctionError> {
        let (done, written) = oneshot::channel();
        self.send(Write::Task(TaskWrite::End {
            end: TaskEnd {
                task_id: task_id.to_owned(),
                state,
                message: message.to_owned(),
                at: Utc::now(),
            },
            done,
        }));
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
    let mut held = HeldRows::default();
    loop {
        let more = rx.recv_many(&mut writes, BATCH);
        let received = match held.next_due() {
            // None: a held row is due.
            Some(due) => tokio::time::timeout_at(due, more).await.ok(),
            None => Some(more.await),
        };
        match received {
            Some(0) => break,
            Some(_) => gather(&mut rx, &mut writes).await,
            None => {}
        }
        for batch in Batch::split(std::mem::take(&mut writes), &mut held, Instant::now()) {
            batch.apply(store.as_ref()).await;
        }
    }
    // Every writer is gone: the rows still held are written as they stand.
    let last = Batch {
        inserts: held.take_all(),
        ..Batch::default()
    };
    last.apply(store.as_ref()).await;
}

/// New tasks' rows waiting for their task's first write.
#[derive(Default)]
struct HeldRows {
    rows: HashMap<String, NewTask>,
    /// When each row is due, in the order they came; a row taken with its
    /// task's write leaves its entry here, skipped when reached.
    due: VecDeque<(Instant, String)>,
}

impl HeldRows {
    fn hold(&mut self, rows: Vec<NewTask>, now: Instant) {
        for row in rows {
            self.due.push_back((now + ROW_HOLD, row.id.clone()));
            self.rows.insert(row.id.clone(), row);
        }
    }

    /// The row of `task_id`, if it is held.
    fn take(&mut self, task_id: &str) -> Option<NewTask> {
        self.rows.remove(task_id)
    }

    /// When the next held row is due.
    fn next_due(&mut self) -> Option<Instant> {
        while let Some((at, id)) = self.due.front() {
            if self.rows.contains_key(id) {
                return Some(*at);
            }
            self.due.pop_front();
        }
        None
    }

    /// The rows due by `now`.
    fn take_due(&mut self, now: Instant) -> Vec<NewTask> {
        let mut rows = Vec::new();
        while let Some(at) = self.next_due() {
            if at > now {
                break;
            }
            if let Some((_, id)) = self.due.pop_front() {
                rows.extend(self.rows.remove(&id));
            }
        }
        rows
    }

    fn take_all(&mut self) -> Vec<NewTask> {
        self.due.clear();
        self.rows.drain().map(|(_, row)| row).collect()
    }
}

/// Waits a moment for more writes to join `writes` (at least one): starts
/// up to [`START_HOLD`] for an end, so a short task's start and end share
/// one transaction, and ends [`END_HOLD`] for more of their kind, so a map
/// writes many rows per transaction.
async fn gather(rx: &mut mpsc::UnboundedReceiver<Write>, writes: &mut Vec<Write>) {
    let is_end = |w: &Write| matches!(w, Write::Task(TaskWrite::End { .. }));
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
    /// New rows join `held`; a held row goes in the batch of its task's
    /// first write, and those due by `now` in the first batch.
    fn split(writes: Vec<Write>, held: &mut HeldRows, now: Instant) -> Vec<Batch> {
        let mut batches = vec![Batch::default()];
        for write in writes {
            let write = match write {
                Write::Insert(rows) => {
                    held.hold(rows, now);
                    continue;
                }
                Write::Task(write) => write,
            };
            let task_id = write.task_id();
            let starts_again = matches!(&write, TaskWrite::Start(_) if batches.last().is_some_and(|b| b.touched.contains(task_id)));
            if starts_again {
                batches.push(Batch::default());
            }
            if let Some(batch) = batches.last_mut() {
                batch.inserts.extend(held.take(task_id));
                batch.add(write);
            }
        }
        if let Some(first) = batches.first_mut() {
            first.inserts.extend(held.take_due(now));
        }
        batches
    }

    fn add(&mut self, write: TaskWrite) {
        match write {
            TaskWrite::Start(start) => {
                self.touched.insert(start.task_id.clone());
                self.starts.push(start);
            }
            TaskWrite::Retry { task_id, message } => {
                self.touched.insert(task_id.clone());
                self.retries.push((task_id, message));
            }
            TaskWrite::Requeue { task_id, message } => {
                self.touched.insert(task_id.clone());
                self.requeues.push((task_id, message));
            }
            TaskWrite::End { end, done } => {
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
        let mut pause = RETRY_FIRST;
        let moved = loop {
            match store.move_tasks(&moves).await {
                Err(error) if error.is_transient() && pause <= RETRY_LAST => {
                    tracing::warn!(
                        %error,
                        retry_in_ms = pause.as_millis() as u64,
                        "cannot record task starts and ends yet; trying again"
                    );
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                moved => break moved,
            }
        };
        let failure = match moved {
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
        Write::Task(TaskWrite::Start(TaskStart {
            task_id: task_id.into(),
            attempt,
            container_id: format!("c{attempt}"),
            worker_id: "w".into(),
            at: Utc::now(),
        }))
    }

    fn retry(task_id: &str) -> Write {
        Write::Task(TaskWrite::Retry {
            task_id: task_id.into(),
            message: "again".into(),
        })
    }

    fn end(task_id: &str, state: FinalState) -> Write {
        Write::Task(TaskWrite::End {
            end: TaskEnd {
                task_id: task_id.into(),
                state,
                message: String::new(),
                at: Utc::now(),
            },
            done: oneshot::channel().0,
        })
    }

    fn insert(ids: &[&str]) -> Write {
        Write::Insert(
            ids.iter()
                .map(|id| NewTask {
                    id: (*id).into(),
                    workspace_id: "ws".into(),
                    stub_id: "st".into(),
                    function_name: "f".into(),
                    created_at: Utc::now(),
                })
                .collect(),
        )
    }

    fn inserted(batch: &Batch) -> Vec<&str> {
        batch.inserts.iter().map(|row| row.id.as_str()).collect()
    }

    /// Splits `writes` as the writer does, with nothing held before.
    fn split(writes: Vec<Write>) -> Vec<Batch> {
        Batch::split(writes, &mut HeldRows::default(), Instant::now())
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
        let batches = split(vec![
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
        let requeue = Write::Task(TaskWrite::Requeue {
            task_id: "a".into(),
            message: "its worker was lost".into(),
        });
        let batches = split(vec![start("a", 1), requeue, start("a", 1)]);
        assert_eq!(batches.len(), 2);
        assert_eq!(starts(&batches[0]), [("a", 1)]);
        assert_eq!(batches[0].requeues.len(), 1);
        assert_eq!(starts(&batches[1]), [("a", 1)]);
        assert!(batches[1].requeues.is_empty());
    }

    #[test]
    fn a_retry_then_the_next_start_are_two_batches() {
        let batches = split(vec![retry("a"), start("a", 2), end("a", FinalState::Error)]);
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0].retries.len(), 1);
        assert!(batches[0].starts.is_empty());
        assert_eq!(starts(&batches[1]), [("a", 2)]);
        assert_eq!(batches[1].ends.len(), 1);
    }

    #[test]
    fn a_new_row_goes_in_the_batch_of_its_tasks_first_write() {
        let mut held = HeldRows::default();
        let now = Instant::now();
        let batches = Batch::split(
            vec![
                insert(&["a", "b", "c"]),
                start("a", 1),
                retry("a"),
                start("b", 1),
                start("a", 2),
            ],
            &mut held,
            now,
        );
        assert_eq!(batches.len(), 2);
        assert_eq!(inserted(&batches[0]), ["a", "b"], "with their starts");
        assert!(inserted(&batches[1]).is_empty());
        assert_eq!(
            held.next_due(),
            Some(now + ROW_HOLD),
            "c waits for its start"
        );

        let later = Instant::now();
        let batches = Batch::split(vec![end("c", FinalState::Cancelled)], &mut held, later);
        assert_eq!(inserted(&batches[0]), ["c"], "with its end");
        assert_eq!(held.next_due(), None);
    }

    #[test]
    fn a_held_row_is_written_pending_once_it_is_due() {
        let mut held = HeldRows::default();
        let then = Instant::now();
        let batches = Batch::split(vec![insert(&["a", "b"])], &mut held, then);
        assert!(inserted(&batches[0]).is_empty());
        let batches = Batch::split(vec![insert(&["c"])], &mut held, then + ROW_HOLD / 2);
        assert!(inserted(&batches[0]).is_empty());

        let batches = Batch::split(vec![start("b", 1)], &mut held, then + ROW_HOLD);
        assert_eq!(inserted(&batches[0]), ["b", "a"], "b with its start, a due");
        assert_eq!(held.next_due(), Some(then + ROW_HOLD / 2 + ROW_HOLD));
        assert_eq!(held.take_all().len(), 1, "c is still held");
    }
}
