//! An ASGI app's streamed answer (`StreamingResponse`, server-sent events):
//! its task's items, passed to the HTTP client as they come.
//!
//! Item 0 is the head and the first chunk, each later item one more chunk
//! (see [`super::asgi`]). An item counts as taken, and is acknowledged to
//! the runner, when the HTTP listener asks for it: the listener asks only
//! as fast as the client reads, and the runner sends items only within a
//! window of unacknowledged ones, so a slow client holds the app back
//! instead of the answer piling up here. A client that goes away drops
//! the stream, which cancels the task and so the app's request.

use std::io;

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures::stream::BoxStream;
use futures::StreamExt;
use levers9_api::v1::{run_event, FinalTaskState, ItemsReceived, RunEvent, TaskItemEvent};
use tokio::sync::mpsc::UnboundedSender;
use tonic::Status;

use super::asgi;
use crate::error::ApiError;

/// The call's events after its first item, and where its receipts go.
pub(super) struct Rest {
    pub events: BoxStream<'static, Result<RunEvent, Status>>,
    pub receipts: UnboundedSender<ItemsReceived>,
}

impl Rest {
    /// Tells the runner the client has taken `item`.
    pub(super) fn taken(&self, item: &TaskItemEvent) {
        taken(&self.receipts, item);
    }
}

/// Tells the runner, through `receipts`, the client has taken `item`.
pub(super) fn taken(receipts: &UnboundedSender<ItemsReceived>, item: &TaskItemEvent) {
    // A closed channel means the call ended: nothing left to hold back.
    let _ = receipts.send(ItemsReceived {
        task_id: item.task_id.clone(),
        received: item.item_index + 1,
    });
}

/// The answer whose head and first chunk are `first`, its body streamed
/// from `rest`. The task's failure after the head ends the body abruptly:
/// the status was sent already.
pub(super) fn response(first: TaskItemEvent, rest: Rest) -> Result<Response, ApiError> {
    rest.taken(&first);
    asgi::answer(first.payload, |chunk| {
        let first = futures::stream::once(async move { Ok(Bytes::from(chunk)) });
        Body::from_stream(first.chain(chunks(rest)))
    })
}

fn chunks(rest: Rest) -> impl futures::Stream<Item = Result<Bytes, io::Error>> + Send {
    futures::stream::unfold(Some(rest), |rest| async move {
        let mut rest = rest?;
        loop {
            let failure = match rest.events.next().await {
                Some(Ok(RunEvent {
                    kind: Some(run_event::Kind::Item(item)),
                })) => {
                    rest.taken(&item);
                    return Some((Ok(Bytes::from(item.payload)), Some(rest)));
                }
                Some(Ok(RunEvent {
                    kind: Some(run_event::Kind::Result(outcome)),
                })) if outcome.state() == FinalTaskState::Complete => return None,
                Some(Ok(RunEvent {
                    kind: Some(run_event::Kind::Result(outcome)),
                })) => format!("the app failed after its answer began: {}", outcome.message),
                Some(Ok(_)) => continue,
                Some(Err(status)) => status.message().to_owned(),
                None => "the call ended without a result".to_owned(),
            };
            tracing::info!(%failure, "a streamed endpoint answer ended early");
            return Some((Err(io::Error::other(failure)), None));
        }
    })
}

#[cfg(test)]
mod tests {
    use axum::body::to_bytes;
    use levers9_api::v1::TaskOutcome;
    use levers9_store::FinalState;
    use tokio::sync::mpsc;

    use super::*;
    use crate::wire_states;

    fn item(index: u64, payload: &[u8]) -> TaskItemEvent {
        TaskItemEvent {
            task_id: "t1".into(),
            item_index: index,
            payload: payload.to_vec(),
            ..TaskItemEvent::default()
        }
    }

    fn event(kind: run_event::Kind) -> Result<RunEvent, Status> {
        Ok(RunEvent { kind: Some(kind) })
    }

    fn ended(state: FinalState) -> Result<RunEvent, Status> {
        event(run_event::Kind::Result(TaskOutcome {
            task_id: "t1".into(),
            state: wire_states::final_state(state).into(),
            message: "RuntimeError: broke".into(),
            ..TaskOutcome::default()
        }))
    }

    /// The answer from a head and first chunk, then `later`; the receipts sent.
    async fn streamed(
        later: Vec<Result<RunEvent, Status>>,
    ) -> (Response, mpsc::UnboundedReceiver<ItemsReceived>) {
        let (receipts, taken) = mpsc::unbounded_channel();
        let rest = Rest {
            events: futures::stream::iter(later).boxed(),
            receipts,
        };
        let first = item(
            0,
            b"{\"status\":200,\"headers\":[[\"content-type\",\"text/event-stream\"]]}\ndata: 0\n\n",
        );
        (response(first, rest).unwrap(), taken)
    }

    #[tokio::test]
    async fn the_body_is_the_chunks_in_order_each_acknowledged_as_it_is_taken() {
        let (response, mut taken) = streamed(vec![
            event(run_event::Kind::Item(item(1, b"data: 1\n\n"))),
            ended(FinalState::Complete),
        ])
        .await;
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        // The head's item counts as taken once the answer is made.
        assert_eq!(taken.try_recv().unwrap().received, 1);
        assert!(taken.try_recv().is_err(), "item 1 was not taken yet");
        let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        assert_eq!(&body[..], b"data: 0\n\ndata: 1\n\n");
        assert_eq!(taken.try_recv().unwrap().received, 2);
    }

    #[tokio::test]
    async fn a_failure_after_the_head_ends_the_body_with_an_error() {
        for later in [
            vec![ended(FinalState::Error)],
            vec![Err(
                ApiError::Interrupted("lost the hot state".into()).into()
            )],
            vec![],
        ] {
            let (response, _taken) = streamed(later).await;
            assert!(to_bytes(response.into_body(), usize::MAX).await.is_err());
        }
    }
}
