//! One Run stream of the FunctionService: inputs in, events out.

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};
use levers9_api::v1::{
    controlplane_message, run_event, run_request, ControlplaneMessage, ItemsAck, ItemsReceived,
    RunEvent, RunInput, RunInputs, RunRequest, RunStart, TaskAccepted, TaskItemEvent, TaskOutcome,
    TaskOutcomes,
};
use levers9_store::StubRecord;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use crate::error::ApiError;
use crate::functions::spec::StubSpec;
use crate::functions::submit::{self, RowBy};
use crate::functions::{DispatchEvent, Ticket};
use crate::Shared;

/// Inputs a Run stream turns into tasks in one batch, at most (a batch
/// takes whole requests, so it may pass this by one request's inputs).
const BATCH: usize = 500;

/// Complete results sent in one event, at most.
const RESULTS_PER_EVENT: usize = 256;
/// Payload bytes of the results gathered for one event, at most (before
/// the one that passes it).
const RESULT_BYTES_PER_EVENT: usize = 1 << 20;
/// While at least [`HOLD_ABOVE`] results are still to come, complete ones
/// wait up to this long for more to share their event: a map's caller pays
/// for each message it receives far more than for each result in it, and
/// its freed slots then come back as one message of inputs, not many.
const HOLD_FOR: Duration = Duration::from_millis(5);
/// Results still to come above which ready ones are held ([`HOLD_FOR`]);
/// below it each leaves at once, so a small map waits for nothing.
const HOLD_ABOVE: usize = 64;

pub(crate) type EventStream = Pin<Box<dyn Stream<Item = Result<RunEvent, Status>> + Send>>;

pub(super) fn event(kind: run_event::Kind) -> Result<RunEvent, Status> {
    Ok(RunEvent { kind: Some(kind) })
}

/// One Run stream: inputs in, events out, its tasks cancelled if the
/// caller goes away first.
pub(super) struct RunDriver {
    shared: Arc<Shared>,
    stub: StubRecord,
    reply: String,
    report_accepted: bool,
    batch_results: bool,
    tx: mpsc::Sender<Result<RunEvent, Status>>,
    /// Tasks without a result yet.
    outstanding: HashSet<String>,
    /// Complete results ready to go in the next event (batch_results).
    ready: Vec<TaskOutcome>,
    ready_bytes: usize,
    /// A generator's Run: one input, its items streamed and acknowledged.
    generator: bool,
    /// Inputs taken so far.
    inputs_taken: usize,
    /// Where each generator task last sent an item from (worker,
    /// container): where the caller's acknowledgements go.
    running_at: HashMap<String, (String, String)>,
}

/// Refuses a call of the wrong kind for the stub: a generator streams
/// items, which only a Run that says `generator` takes (and acknowledges);
/// a plain function has none to stream. `generator_call` is what the
/// caller asked for. A class's methods differ in kind, so its container
/// checks each call against the method it names instead.
pub(super) fn check_call_kind(stub: &StubRecord, generator_call: bool) -> Result<(), ApiError> {
    let spec = StubSpec::from_json(&stub.id, &stub.config_json)?;
    if !spec.class_parameters.is_empty() {
        return Ok(());
    }
    match (spec.generator, generator_call) {
        (true, false) => Err(ApiError::FailedPrecondition(format!(
            "{} is a generator function: iterate over .remote_gen(...) (or async for over \
             .remote_gen.aio(...)), which streams its items; .remote, .map and .spawn take a \
             returned value",
            stub.name
        ))),
        (false, true) => Err(ApiError::FailedPrecondition(format!(
            "{} is not a generator function: call it with .remote(...), which returns its \
             value; .remote_gen streams the items of a function that yields",
            stub.name
        ))),
        _ => Ok(()),
    }
}

impl RunDriver {
    /// Drives a Run or Call of the stub `stub`, as `start` asks, on a task
    /// of its own: `inbound`'s inputs become tasks, `events` (the reply
    /// channel `reply`) their results. The stream returned carries what
    /// the caller gets.
    pub(super) fn spawn(
        shared: Arc<Shared>,
        stub: StubRecord,
        reply: String,
        start: &RunStart,
        inbound: futures::stream::BoxStream<'static, Result<RunRequest, Status>>,
        events: futures::stream::BoxStream<'static, RunEvent>,
    ) -> EventStream {
        let (tx, rx) = mpsc::channel(256);
        let mut run = Self {
            shared,
            stub,
            reply,
            report_accepted: start.report_accepted,
            batch_results: start.batch_results,
            tx,
            outstanding: HashSet::new(),
            ready: Vec::new(),
            ready_bytes: 0,
            generator: start.generator,
            inputs_taken: 0,
            running_at: HashMap::new(),
        };
        tokio::spawn(async move { run.drive(inbound, events).await });
        Box::pin(ReceiverStream::new(rx))
    }

    async fn drive(
        &mut self,
        mut inbound: futures::stream::BoxStream<'static, Result<RunRequest, Status>>,
        mut events: futures::stream::BoxStream<'static, RunEvent>,
    ) {
        // A generator's caller keeps its side open after its one input, for
        // its acknowledgements: its Run ends with its task.
        let mut inbound_open = true;
        // When the results held for the next event must leave.
        let mut flush_at: Option<Instant> = None;
        loop {
            let inputs_done = !inbound_open || (self.generator && self.inputs_taken > 0);
            if inputs_done && self.outstanding.is_empty() {
                self.send_ready().await;
                return;
            }
            tokio::select! {
                message = inbound.next(), if inbound_open => match message {
                    Some(Ok(first)) => {
                        let mut count = input_count(&first);
                        let mut batch = vec![first];
                        // Take what else has arrived already, so a map
                        // becomes a few large writes rather than many small.
                        while count < BATCH {
                            match inbound.next().now_or_never() {
                                Some(Some(Ok(next))) => {
                                    count += input_count(&next);
                                    batch.push(next);
                                }
                                Some(None) => { inbound_open = false; break; }
                                _ => break,
                            }
                        }
                        if let Err(status) = self.accept(batch).await {
                            let _ = self.tx.send(Err(status)).await;
                            self.cancel_outstanding().await;
                            return;
                        }
                    }
                    None => inbound_open = false,
                    Some(Err(_)) => {
                        self.cancel_outstanding().await;
                        return;
                    }
                },
                event = events.next() => {
                    // What else has arrived goes too, so results ready
                    // together leave in one event.
                    let mut next = event;
                    let ended = loop {
                        let Some(event) = next else { break true };
                        if !self.forward(event).await {
                            self.cancel_outstanding().await;
                            return;
                        }
                        match events.next().now_or_never() {
                            Some(more) => next = more,
                            None => break false,
                        }
                    };
                    if self.ready.is_empty() || self.outstanding.len() < HOLD_ABOVE {
                        flush_at = None;
                        if !self.send_ready().await {
                            self.cancel_outstanding().await;
                            return;
                        }
                    } else if flush_at.is_none() {
                        flush_at = Some(Instant::now() + HOLD_FOR);
                    }
                    if ended {
                        self.send_ready().await;
                        let lost = ApiError::Interrupted(
                            "lost the hot state's event channel; call again".into(),
                        );
                        let _ = self.tx.send(Err(lost.into())).await;
                        return;
                    }
                }
                () = tokio::time::sleep_until(flush_at.unwrap_or_else(Instant::now)),
                    if flush_at.is_some() =>
                {
                    flush_at = None;
                    if !self.send_ready().await {
                        self.cancel_outstanding().await;
                        return;
                    }
                }
                () = self.tx.closed() => {
                    self.cancel_outstanding().await;
                    return;
                }
            }
        }
    }

    async fn accept(&mut self, batch: Vec<RunRequest>) -> Result<(), Status> {
        let mut inputs = Vec::with_capacity(batch.iter().map(input_count).sum());
        for request in batch {
            let given = match request.kind {
                Some(run_request::Kind::Input(input)) => vec![input],
                Some(run_request::Kind::Inputs(RunInputs { inputs })) => inputs,
                Some(run_request::Kind::Received(received)) => {
                    self.acknowledge(received).await?;
                    continue;
                }
                _ => {
                    return Err(ApiError::InvalidArgument(
                        "only inputs may follow the start of a Run stream".into(),
                    )
                    .into())
                }
            };
            self.inputs_taken += given.len();
            if self.generator && self.inputs_taken > 1 {
                return Err(ApiError::InvalidArgument(
                    "a generator's Run takes one input: start a Run for each call".into(),
                )
                .into());
            }
            for RunInput { index, payload } in given {
                let task_id = submit::new_task_id();
                self.outstanding.insert(task_id.clone());
                let ticket = Ticket {
                    task_id,
                    reply: self.reply.clone(),
                    index,
                };
                inputs.push((ticket, payload));
            }
        }
        if inputs.is_empty() {
            return Ok(());
        }
        // Only callers that asked for task ids pay for a copy of them.
        let accepted: Vec<(u64, String)> = if self.report_accepted {
            inputs
                .iter()
                .map(|(t, _)| (t.index, t.task_id.clone()))
                .collect()
        } else {
            Vec::new()
        };
        submit::submit(
            self.shared.functions.as_ref(),
            &self.shared.tasks,
            &self.stub,
            inputs,
            // A caller given the ids may use them at once.
            if self.report_accepted {
                RowBy::Submit
            } else {
                RowBy::Start
            },
        )
        .await?;
        for (index, task_id) in accepted {
            let accepted = run_event::Kind::Accepted(TaskAccepted { index, task_id });
            if !self.send(accepted).await {
                return Err(ApiError::Cancelled("the caller went away".into()).into());
            }
        }
        Ok(())
    }

    /// Passes one event on (or keeps a complete result for the next
    /// event); false if the caller is gone.
    async fn forward(&mut self, event: RunEvent) -> bool {
        let Some(kind) = event.kind else {
            return true;
        };
        let kind = match kind {
            run_event::Kind::Result(notice) => {
                if !self.outstanding.remove(&notice.task_id) {
                    return true;
                }
                self.running_at.remove(&notice.task_id);
                // A complete result comes with its payload from the
                // worker's stream; other ends are notices to look up.
                let complete = notice.state() == levers9_api::v1::FinalTaskState::Complete;
                if complete && !notice.payload.is_empty() {
                    if !self.batch_results {
                        return self.send(run_event::Kind::Result(notice)).await;
                    }
                    self.ready_bytes += notice.payload.len();
                    self.ready.push(notice);
                    if self.ready.len() >= RESULTS_PER_EVENT
                        || self.ready_bytes >= RESULT_BYTES_PER_EVENT
                    {
                        return self.send_ready().await;
                    }
                    return true;
                }
                match submit::final_outcome(&self.shared.tasks, &notice).await {
                    Ok(outcome) => run_event::Kind::Result(outcome),
                    Err(error) => return self.tx.send(Err(error.into())).await.is_ok(),
                }
            }
            run_event::Kind::Item(item) => match self.item(item).await {
                Ok(Some(item)) => run_event::Kind::Item(item),
                Ok(None) => return true,
                Err(error) => return self.tx.send(Err(error.into())).await.is_ok(),
            },
            other => other,
        };
        // In the order they came: the results kept so far go first.
        self.send_ready().await && self.send(kind).await
    }

    /// A generator's item for the caller, whole (one over 1 MiB waited in
    /// the hot state); `None` for an item of a task no longer followed.
    async fn item(&mut self, mut item: TaskItemEvent) -> Result<Option<TaskItemEvent>, ApiError> {
        if !self.outstanding.contains(&item.task_id) {
            return Ok(None);
        }
        self.running_at.insert(
            item.task_id.clone(),
            (item.worker_id.clone(), item.container_id.clone()),
        );
        if item.payload.is_empty() {
            let tasks = &self.shared.tasks;
            item.payload = tasks
                .take_item(&item.task_id, item.item_index)
                .await?
                .ok_or_else(|| {
                    ApiError::Unavailable(format!(
                        "item {} of task {} expired before it could be sent: call again",
                        item.item_index, item.task_id
                    ))
                })?;
        }
        Ok(Some(item))
    }

    /// Passes a generator caller's count of items taken to the runner of
    /// the task, which sends more items only as this count grows.
    async fn acknowledge(&self, received: ItemsReceived) -> Result<(), ApiError> {
        let Some((worker_id, container_id)) = self.running_at.get(&received.task_id) else {
            // No item came yet (nothing to acknowledge), or the task ended.
            return Ok(());
        };
        let ack = ControlplaneMessage {
            kind: Some(controlplane_message::Kind::ItemsAck(ItemsAck {
                container_id: container_id.clone(),
                task_id: received.task_id,
                received: received.received,
            })),
        };
        Ok(self.shared.fleet.send_to_worker(worker_id, ack).await?)
    }

    /// Sends the complete results kept for one event, if any.
    async fn send_ready(&mut self) -> bool {
        self.ready_bytes = 0;
        match self.ready.len() {
            0 => true,
            1 => {
                let outcome = self.ready.pop().unwrap_or_default();
                self.send(run_event::Kind::Result(outcome)).await
            }
            _ => {
                let outcomes = std::mem::take(&mut self.ready);
                self.send(run_event::Kind::Results(TaskOutcomes { outcomes }))
                    .await
            }
        }
    }

    async fn send(&self, kind: run_event::Kind) -> bool {
        self.tx.send(event(kind)).await.is_ok()
    }

    async fn cancel_outstanding(&mut self) {
        for task_id in self.outstanding.drain() {
            let event = DispatchEvent::Cancel { task_id };
            if let Err(error) = self.shared.tasks.tell(&event).await {
                tracing::warn!(%error, "cannot cancel the task of a caller that went away");
            }
        }
    }
}

/// Inputs a request carries (a start carries none).
fn input_count(request: &RunRequest) -> usize {
    match &request.kind {
        Some(run_request::Kind::Input(_)) => 1,
        Some(run_request::Kind::Inputs(batch)) => batch.inputs.len(),
        _ => 0,
    }
}
