//! Run streams' reply channels, routed per replica.
//!
//! A Run stream's events come from wherever its tasks' workers are attached
//! and from the dispatcher. Subscribing to a hot-state channel per call costs
//! a connection to Redis each; instead each replica subscribes once, to its
//! own channel `replica:<id>`, and routes what arrives to its callers. An
//! event for a caller on the same replica never leaves the process, nor is
//! it encoded: it goes to the caller's stream as it is.
//!
//! A reply name says which replica its caller is on: `run.<replica>.<n>`.
//! When the replica's subscription breaks, events may have been missed, so
//! every open reply ends (its caller is told to call again) before the
//! subscription is made anew.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use levers9_api::v1::RunEvent;
use levers9_state::{keys, HotState};
use levers9_sync::Lock;
use prost::Message;
use tokio::sync::{mpsc, watch};

use crate::functions::FunctionError;

const PREFIX: &str = "run.";
/// How long opening a reply waits for the replica's subscription.
const READY_WAIT: Duration = Duration::from_secs(5);
/// Pause before subscribing again after the subscription failed.
const RESUBSCRIBE_PAUSE: Duration = Duration::from_millis(500);

type Senders = HashMap<String, mpsc::UnboundedSender<RunEvent>>;

/// This replica's callers and the way to everyone else's.
pub struct Replies {
    replica: String,
    state: Arc<dyn HotState>,
    local: Lock<Senders>,
    subscribed: watch::Sender<bool>,
}

impl Replies {
    /// The replies of replica `replica`; none can be opened until
    /// [`Replies::route`] runs.
    pub fn new(state: Arc<dyn HotState>, replica: &str) -> Arc<Self> {
        Arc::new(Self {
            replica: replica.to_owned(),
            state,
            local: Lock::default(),
            subscribed: watch::Sender::new(false),
        })
    }

    /// Whether `reply` is a routed one (else it is a plain channel).
    pub fn is_routed(reply: &str) -> bool {
        reply.starts_with(PREFIX)
    }

    /// A new reply and its events, until the stream is dropped.
    pub async fn open(self: &Arc<Self>) -> Result<(String, ReplyStream), FunctionError> {
        let mut subscribed = self.subscribed.subscribe();
        let ready = tokio::time::timeout(READY_WAIT, subscribed.wait_for(|up| *up)).await;
        if !matches!(ready, Ok(Ok(_))) {
            return Err(FunctionError::RepliesNotFollowed);
        }
        let reply = format!("{PREFIX}{}.{}", self.replica, uuid::Uuid::now_v7().simple());
        let (tx, rx) = mpsc::unbounded_channel();
        self.local.lock().insert(reply.clone(), tx);
        let stream = ReplyStream {
            rx,
            reply: reply.clone(),
            replies: self.clone(),
        };
        Ok((reply, stream))
    }

    /// Sends `event` to the caller of `reply`, wherever it is. A caller that
    /// went away is no error.
    pub async fn publish(&self, reply: &str, event: RunEvent) -> Result<(), FunctionError> {
        let replica = reply
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split_once('.'))
            .map(|(replica, _)| replica);
        let Some(replica) = replica else {
            return Err(FunctionError::CorruptReplyName(reply.to_owned()));
        };
        if replica == self.replica {
            self.deliver(reply, event);
            return Ok(());
        }
        let mut envelope = Vec::with_capacity(2 + reply.len() + event.encoded_len());
        // Reply names are short ASCII: the length fits.
        envelope.extend_from_slice(&u16::try_from(reply.len()).unwrap_or(0).to_be_bytes());
        envelope.extend_from_slice(reply.as_bytes());
        // Writing to a Vec cannot run out of room.
        let _ = event.encode(&mut envelope);
        self.state
            .publish(&keys::replica(replica), &envelope)
            .await?;
        Ok(())
    }

    fn deliver(&self, reply: &str, event: RunEvent) {
        let mut local = self.local.lock();
        if let Some(tx) = local.get(reply) {
            if tx.send(event).is_err() {
                local.remove(reply);
            }
        }
    }

    /// Keeps this replica's subscription up and routes what arrives to its
    /// callers, until `stopped`.
    pub async fn route(self: Arc<Self>, mut stopped: watch::Receiver<bool>) {
        let channel = keys::replica(&self.replica);
        while !*stopped.borrow() {
            let mut events = match self.state.subscribe(&channel).await {
                Ok(events) => events,
                Err(error) => {
                    tracing::warn!(%error, "cannot subscribe to this replica's reply channel");
                    tokio::time::sleep(RESUBSCRIBE_PAUSE).await;
                    continue;
                }
            };
            self.subscribed.send_replace(true);
            loop {
                tokio::select! {
                    envelope = events.next() => match envelope {
                        Some(envelope) => self.unwrap(&envelope),
                        None => break,
                    },
                    _ = stopped.changed() => break,
                }
            }
            self.subscribed.send_replace(false);
            // Whatever was published meanwhile is gone: end every caller
            // rather than leave one waiting for a result that never comes.
            self.local.lock().clear();
            if !*stopped.borrow() {
                tracing::warn!("lost this replica's reply channel; subscribing again");
            }
        }
    }

    fn unwrap(&self, envelope: &[u8]) {
        let Some(len) = envelope
            .get(..2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
        else {
            return;
        };
        let (Some(reply), Some(event)) = (envelope.get(2..2 + len), envelope.get(2 + len..)) else {
            tracing::error!("dropping an unreadable reply envelope");
            return;
        };
        let (Ok(reply), Ok(event)) = (std::str::from_utf8(reply), RunEvent::decode(event)) else {
            tracing::error!("dropping an unreadable reply envelope");
            return;
        };
        self.deliver(reply, event);
    }
}

/// The events of one reply; dropping it closes the reply.
pub struct ReplyStream {
    rx: mpsc::UnboundedReceiver<RunEvent>,
    reply: String,
    replies: Arc<Replies>,
}

impl Stream for ReplyStream {
    type Item = RunEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<RunEvent>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for ReplyStream {
    fn drop(&mut self) {
        self.replies.local.lock().remove(&self.reply);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use levers9_api::v1::{run_event, TaskOutcome};
    use levers9_state::MemoryState;

    fn result(task_id: &str) -> RunEvent {
        RunEvent {
            kind: Some(run_event::Kind::Result(TaskOutcome {
                task_id: task_id.into(),
                ..TaskOutcome::default()
            })),
        }
    }

    async fn replica(state: &Arc<MemoryState>, id: &str) -> (Arc<Replies>, watch::Sender<bool>) {
        let replies = Replies::new(state.clone(), id);
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(replies.clone().route(stopped));
        (replies, stop)
    }

    #[tokio::test]
    async fn events_reach_callers_on_the_same_and_on_another_replica() {
        let state = Arc::new(MemoryState::new());
        let (a, _stop_a) = replica(&state, "a").await;
        let (b, _stop_b) = replica(&state, "b").await;
        let (reply, mut events) = a.open().await.expect("open");
        assert!(Replies::is_routed(&reply));
        a.publish(&reply, result("local")).await.expect("local");
        b.publish(&reply, result("remote")).await.expect("remote");
        assert_eq!(events.next().await, Some(result("local")));
        assert_eq!(events.next().await, Some(result("remote")));
    }

    #[tokio::test]
    async fn a_dropped_reply_is_forgotten_and_publishing_to_it_is_no_error() {
        let state = Arc::new(MemoryState::new());
        let (a, _stop) = replica(&state, "a").await;
        let (reply, events) = a.open().await.expect("open");
        drop(events);
        assert!(a.local.lock().is_empty());
        a.publish(&reply, result("late")).await.expect("publish");
    }

    #[tokio::test]
    async fn a_stopped_router_ends_its_callers_and_opens_no_more() {
        let state = Arc::new(MemoryState::new());
        let (a, stop) = replica(&state, "a").await;
        let (_, mut events) = a.open().await.expect("open");
        stop.send_replace(true);
        assert_eq!(events.next().await, None);
        assert!(matches!(
            a.open().await,
            Err(FunctionError::RepliesNotFollowed)
        ));
    }

    #[tokio::test]
    async fn a_reply_name_of_no_replica_is_refused() {
        let state = Arc::new(MemoryState::new());
        let (a, _stop) = replica(&state, "a").await;
        assert!(matches!(
            a.publish("run.nodot", RunEvent::default()).await,
            Err(FunctionError::CorruptReplyName(_))
        ));
    }
}
