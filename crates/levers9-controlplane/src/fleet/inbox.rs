//! Workers' inboxes: requests for a worker, from any replica, to the replica
//! holding its stream.
//!
//! The inbox of record is the queue `worker-inbox:<id>` in the hot state.
//! A request placed on the replica that holds the worker's stream skips it
//! and goes straight to the stream's pump, in process; requests that meet
//! no stream here take the queue, and the pump moves them over.

use std::collections::HashMap;
use std::time::Duration;

use levers9_api::v1::ControlplaneMessage;
use levers9_state::{keys, Write};
use levers9_sync::Lock;
use prost::Message;
use tokio::sync::mpsc;

use super::{Fleet, FleetError};

/// How long one pop of an inbox waits.
const INBOX_WAIT: Duration = Duration::from_secs(1);

/// The inbox queue of a worker ([`keys::inbox`]).
pub fn queue(worker_id: &str) -> String {
    keys::inbox(worker_id)
}

type Sender = mpsc::UnboundedSender<ControlplaneMessage>;

/// The pumps of the worker streams held by this replica.
#[derive(Default)]
pub struct LocalInboxes(Lock<HashMap<String, Sender>>);

/// One stream's inbox: what is sent to its worker, from here or from the
/// queue, until it is closed.
pub struct Inbox {
    fleet: Fleet,
    worker_id: String,
    tx: Sender,
    rx: mpsc::UnboundedReceiver<ControlplaneMessage>,
}

impl Inbox {
    /// Opens the inbox of `worker_id` on this replica (replacing an older
    /// stream's) and starts moving its queue over.
    pub fn open(fleet: &Fleet, worker_id: &str) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        fleet
            .local_inboxes
            .0
            .lock()
            .insert(worker_id.to_owned(), tx.clone());
        tokio::spawn(forward_queue(
            fleet.clone(),
            worker_id.to_owned(),
            tx.clone(),
        ));
        Self {
            fleet: fleet.clone(),
            worker_id: worker_id.to_owned(),
            tx,
            rx,
        }
    }

    /// The next message for the worker, told on this replica or moved over from
    /// its hot-state queue.
    pub async fn next(&mut self) -> Option<ControlplaneMessage> {
        self.rx.recv().await
    }

    /// Gives a request that could not be sent back to the queue, for the
    /// worker's next stream.
    pub async fn give_back(&self, message: &ControlplaneMessage) {
        give_back(&self.fleet, &self.worker_id, message).await;
    }

    /// Stops taking requests here and gives back those not taken.
    pub async fn close(mut self) {
        {
            let mut local = self.fleet.local_inboxes.0.lock();
            if local
                .get(&self.worker_id)
                .is_some_and(|tx| tx.same_channel(&self.tx))
            {
                local.remove(&self.worker_id);
            }
        }
        self.rx.close();
        while let Some(message) = self.rx.recv().await {
            self.give_back(&message).await;
        }
    }
}

async fn give_back(fleet: &Fleet, worker_id: &str, message: &ControlplaneMessage) {
    if let Err(error) = fleet
        .state
        .push(&queue(worker_id), &message.encode_to_vec())
        .await
    {
        tracing::error!(%error, %worker_id, "cannot return a request to the worker inbox");
    }
}

/// Puts `message` in the inbox of `worker_id`.
pub async fn send(
    fleet: &Fleet,
    worker_id: &str,
    message: ControlplaneMessage,
) -> Result<(), FleetError> {
    send_many(fleet, vec![(worker_id.to_owned(), message)]).await
}

/// Puts each message in the inbox of the worker named with it: straight to
/// the streams held here, the rest to their queues in one round trip.
pub async fn send_many(
    fleet: &Fleet,
    messages: Vec<(String, ControlplaneMessage)>,
) -> Result<(), FleetError> {
    let mut queued = Vec::new();
    {
        let local = fleet.local_inboxes.0.lock();
        for (worker_id, message) in messages {
            let message = match local.get(&worker_id) {
                Some(tx) => match tx.send(message) {
                    Ok(()) => continue,
                    Err(back) => back.0,
                },
                None => message,
            };
            queued.push(Write::Push {
                queue: queue(&worker_id),
                value: message.encode_to_vec(),
            });
        }
    }
    fleet.state.write_batch(&queued).await?;
    Ok(())
}

/// Moves the queue's requests to the stream's inbox until it closes. Runs
/// in its own task so a pop is never cancelled half-way (which could lose a
/// request); one popped after the inbox closed goes back.
async fn forward_queue(fleet: Fleet, worker_id: String, tx: Sender) {
    let queue = queue(&worker_id);
    while !tx.is_closed() {
        let bytes = match fleet.state.pop(&queue, INBOX_WAIT).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => continue,
            Err(error) => {
                tracing::warn!(%error, %worker_id, "cannot read the worker inbox");
                tokio::time::sleep(INBOX_WAIT).await;
                continue;
            }
        };
        let Ok(message) = ControlplaneMessage::decode(bytes.as_slice()) else {
            tracing::error!(%worker_id, "dropping an unreadable inbox message");
            continue;
        };
        if let Err(back) = tx.send(message) {
            give_back(&fleet, &worker_id, &back.0).await;
            return;
        }
    }
}
