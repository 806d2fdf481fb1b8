//! Where the dispatcher's events come from while it leads: the in-process
//! lane, which this replica's tells use, and the hot state's queue, which
//! other replicas use, forwarded into the same lane.

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::TICK;
use crate::functions::{DispatchEvent, TaskState, DISPATCH};

/// The leading dispatcher's events.
pub(super) struct Events {
    tasks: TaskState,
    events: mpsc::UnboundedReceiver<DispatchEvent>,
    forwarder: JoinHandle<()>,
}

impl Events {
    /// Opens the lane and starts forwarding the queue into it.
    pub(super) fn open(tasks: &TaskState) -> Self {
        let (lane, events) = tasks.dispatch_lane.open();
        let forwarder = tokio::spawn(forward_queue(tasks.clone(), lane));
        Self {
            tasks: tasks.clone(),
            events,
            forwarder,
        }
    }

    /// The next event, told on this replica or forwarded from the hot state's
    /// queue.
    pub(super) async fn next(&mut self) -> Option<DispatchEvent> {
        self.events.recv().await
    }

    /// Stops leading: what is told from now on goes to the queue, for
    /// whoever leads next, and what was told here and not handled goes back
    /// there too.
    pub(super) async fn close(mut self) {
        self.tasks.dispatch_lane.close();
        self.events.close();
        while let Some(event) = self.events.recv().await {
            if let Err(error) = self.tasks.queue(&event).await {
                tracing::error!(%error, "cannot hand a dispatch event back to the queue");
            }
        }
        let _ = self.forwarder.await;
    }
}

/// Moves the events other replicas put on the hot state's queue into the
/// lane, until the lane closes. Runs in its own task so a pop is never
/// cancelled half-way (which could lose an event); an event popped after
/// the lane closed goes back on the queue.
async fn forward_queue(tasks: TaskState, lane: mpsc::UnboundedSender<DispatchEvent>) {
    let state = tasks.state().clone();
    while !lane.is_closed() {
        match state.pop(DISPATCH, TICK).await {
            Ok(Some(bytes)) => match serde_json::from_slice::<DispatchEvent>(&bytes) {
                Ok(event) => {
                    if let Err(back) = lane.send(event) {
                        if let Err(error) = tasks.queue(&back.0).await {
                            tracing::error!(%error, "cannot hand a dispatch event back to the queue");
                        }
                        return;
                    }
                }
                Err(error) => tracing::error!(%error, "dropping an unreadable dispatch event"),
            },
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(%error, "cannot read the dispatch queue");
                tokio::time::sleep(TICK).await;
            }
        }
    }
}
