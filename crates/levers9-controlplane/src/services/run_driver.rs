//! One Run stream of the FunctionService: inputs in, events out.

use futures::{FutureExt, StreamExt};
use levers9_api::v1::{run_event, run_request, RunEvent, RunInput, RunRequest, TaskAccepted};
use levers9_store::{task_state, StubRecord};
use prost::Message;
use tokio::sync::mpsc;
use tonic::Status;

use super::function::{event, new_task_id, FunctionApi};
use crate::error::ApiError;
use crate::functions::{DispatchEvent, Ticket};

/// Inputs a Run stream turns into tasks in one batch, at most.
const BATCH: usize = 500;

/// One Run stream: inputs in, events out, its tasks cancelled if the
/// caller goes away first.
pub(super) struct RunDriver {
    pub(super) api: FunctionApi,
    pub(super) stub: StubRecord,
    pub(super) reply: String,
    pub(super) report_accepted: bool,
    pub(super) tx: mpsc::Sender<Result<RunEvent, Status>>,
    /// Tasks without a result yet.
    pub(super) outstanding: std::collections::HashSet<String>,
}

impl RunDriver {
    pub(super) async fn drive(
        &mut self,
        mut inbound: futures::stream::BoxStream<'static, Result<RunRequest, Status>>,
        mut events: futures::stream::BoxStream<'static, Vec<u8>>,
    ) {
        let mut inputs_done = false;
        loop {
            if inputs_done && self.outstanding.is_empty() {
                return;
            }
            tokio::select! {
                message = inbound.next(), if !inputs_done => match message {
                    Some(Ok(first)) => {
                        let mut batch = vec![first];
                        // Take what else has arrived already, so a map
                        // becomes a few large writes rather than many small.
                        while batch.len() < BATCH {
                            match inbound.next().now_or_never() {
                                Some(Some(Ok(next))) => batch.push(next),
                                Some(None) => { inputs_done = true; break; }
                                _ => break,
                            }
                        }
                        if let Err(status) = self.accept(batch).await {
                            let _ = self.tx.send(Err(status)).await;
                            self.cancel_outstanding().await;
                            return;
                        }
                    }
                    None => inputs_done = true,
                    Some(Err(_)) => {
                        self.cancel_outstanding().await;
                        return;
                    }
                },
                bytes = events.next() => {
                    let Some(bytes) = bytes else {
                        let _ = self.tx.send(Err(Status::unavailable(
                            "lost the hot state's event channel; call again",
                        ))).await;
                        return;
                    };
                    if !self.forward(&bytes).await {
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
        let mut inputs = Vec::with_capacity(batch.len());
        for request in batch {
            let Some(run_request::Kind::Input(RunInput { index, payload })) = request.kind else {
                return Err(ApiError::InvalidArgument(
                    "only inputs may follow the start of a Run stream".into(),
                )
                .into());
            };
            let task_id = new_task_id();
            self.outstanding.insert(task_id.clone());
            let ticket = Ticket {
                task_id,
                reply: self.reply.clone(),
                index,
            };
            inputs.push((ticket, payload));
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
        self.api.submit(&self.stub, inputs).await?;
        for (index, task_id) in accepted {
            let accepted = run_event::Kind::Accepted(TaskAccepted { index, task_id });
            if self.tx.send(event(accepted)).await.is_err() {
                return Err(Status::cancelled("the caller went away"));
            }
        }
        Ok(())
    }

    /// Sends one event on; false if the caller is gone.
    async fn forward(&mut self, bytes: &[u8]) -> bool {
        let Ok(RunEvent { kind: Some(kind) }) = RunEvent::decode(bytes) else {
            return true;
        };
        let kind = match kind {
            run_event::Kind::Result(notice) => {
                if !self.outstanding.remove(&notice.task_id) {
                    return true;
                }
                // A complete result comes with its payload from the
                // worker's stream; other ends are notices to look up.
                if notice.state == task_state::COMPLETE && !notice.payload.is_empty() {
                    return self
                        .tx
                        .send(event(run_event::Kind::Result(notice)))
                        .await
                        .is_ok();
                }
                match self.api.final_outcome(&notice).await {
                    Ok(outcome) => run_event::Kind::Result(outcome),
                    Err(error) => return self.tx.send(Err(error.into())).await.is_ok(),
                }
            }
            other => other,
        };
        self.tx.send(event(kind)).await.is_ok()
    }

    async fn cancel_outstanding(&mut self) {
        for task_id in self.outstanding.drain() {
            let event = DispatchEvent::Cancel { task_id };
            if let Err(error) = self.api.shared.fleet.tasks().tell(&event).await {
                tracing::warn!(%error, "cannot cancel the task of a caller that went away");
            }
        }
    }
}
