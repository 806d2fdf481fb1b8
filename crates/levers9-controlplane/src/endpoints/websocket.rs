//! Websockets to ASGI apps: one connection is one task of the endpoint's
//! stub, holding one of its containers' `concurrency` slots while it lasts.
//!
//! The request goes as an ASGI request does (see [`super::asgi`]), its head
//! naming the connection's inbox. The app's messages come back as the
//! task's items, as a streamed answer's chunks do (see [`super::streamed`]):
//! the handshake is answered only when the first one comes, `101` for its
//! accept and `403` for a close (or an app that ends without either), so a
//! refused websocket never opens. Each later item is acknowledged once it
//! is written to the client, so a slow client holds the app back. The
//! client's messages go the other way through the inbox, a queue in the hot
//! state that the runner blocks on with QueueGet, as a container's
//! `Queue.get` does: the container already reaches it, and no new path into
//! a running task is needed. Its items are the client's messages and, last,
//! the end of the connection (the app's `websocket.disconnect`).
//!
//! # Guarantees
//! - Messages reach each side whole and in order; a client message over
//!   [`MAX_MESSAGE`] closes the connection with 1009 and a reason naming
//!   the limit.
//! - The inbox holds at most [`INBOX_ITEMS`] messages: past that the
//!   gateway stops reading the client's socket until the app takes some.
//! - The connection is closed (1001) [`wind_down`] before the function's
//!   timeout, and the app told, so that it can end before the worker
//!   stops it.
//! - A client that leaves: the app gets `websocket.disconnect`; a task
//!   still running [`LEAVE_GRACE`] later is cancelled (the app's coroutine
//!   gets `CancelledError`). The inbox is deleted when the connection ends.

mod messages;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::header::{CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_PROTOCOL, UPGRADE};
use axum::http::HeaderValue;
use axum::response::Response;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use levers9_api::v1::{run_event, FinalTaskState, ItemsReceived, RunEvent};
use levers9_state::{keys, HotState};
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;
use tonic::Status;

use self::messages::{close_code, close_reason, FromApp};
use super::call::{failure, Answer, Gateway, HttpRequest};
use super::lookup::Resolved;
use super::streamed::{taken, Rest};
use crate::error::ApiError;
use crate::services::INBOX_PREFIX;

/// The largest message, either way: a client's larger one closes the
/// connection (1009), an app's raises in its `send`. It travels whole
/// through the hot state and a QueueGet reply.
pub(crate) const MAX_MESSAGE: usize = 1 << 20;
/// What the socket reads at most before the gateway sees a message: past
/// [`MAX_MESSAGE`], so that one a little larger is refused with a reason
/// rather than by the websocket library.
const MAX_WIRE_MESSAGE: usize = 16 << 20;
/// The client's messages the app has not taken yet, at most.
const INBOX_ITEMS: u64 = 64;
/// How long a task may run on after its client left before it is cancelled.
const LEAVE_GRACE: Duration = Duration::from_secs(2);
/// How long the gateway waits for the client's half of the closing
/// handshake, and for a write to a client that does not read.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// How long before the function's timeout the connection is closed: 2 s,
/// or a quarter of a timeout under 8 s.
fn wind_down(timeout: Duration) -> Duration {
    (timeout / 4).min(Duration::from_secs(2))
}

/// Runs the app's side of a websocket to `endpoint` and answers the
/// handshake with what the app said first.
pub(super) async fn open(
    gateway: &Gateway,
    endpoint: &Resolved,
    request: &HttpRequest,
    root_path: &str,
    upgrade: WebSocketUpgrade,
) -> Result<Response, Status> {
    let inbox = Inbox::new(gateway.state(), &endpoint.record.workspace_id);
    let input = super::asgi::input(
        request,
        root_path,
        !endpoint.record.public,
        Some(&inbox.name),
    );
    let (first, rest) = match gateway.call(endpoint, input).await? {
        Answer::Streamed(first, rest) => (first, rest),
        Answer::Whole(outcome) if outcome.state() == FinalTaskState::Complete => {
            return Err(refused("the app ended without accepting the websocket").into())
        }
        Answer::Whole(outcome) => return Err(failure(outcome).into()),
    };
    let (subprotocol, headers, ran) = match FromApp::parse(first.payload.clone()) {
        Ok(FromApp::Accept {
            subprotocol,
            headers,
            ran,
        }) => (subprotocol, headers, ran),
        Ok(FromApp::Close { code, .. }) => {
            return Err(refused(&format!(
                "the app closed the websocket (code {code}) before accepting it"
            ))
            .into())
        }
        Ok(_) => return Err(broken("a message before its accept").into()),
        Err(problem) => return Err(broken(&problem).into()),
    };
    rest.taken(&first);
    let mut upgrade = upgrade
        .max_message_size(MAX_WIRE_MESSAGE)
        .max_frame_size(MAX_WIRE_MESSAGE);
    if let Some(protocol) = subprotocol {
        let protocol = HeaderValue::from_str(&protocol)
            .map_err(|_| broken(&format!("subprotocol {protocol:?}")))?;
        upgrade.set_selected_protocol(protocol);
    }
    // The worker's clock for the timeout started when the input did.
    let now = Instant::now();
    let input_started = now.checked_sub(ran).unwrap_or(now);
    let ends_at = input_started + endpoint.timeout.saturating_sub(wind_down(endpoint.timeout));
    let timeout = endpoint.timeout;
    let mut response = upgrade.on_upgrade(move |socket| async move {
        Connection { rest, inbox }
            .relay(socket, ends_at, timeout)
            .await;
    });
    for (name, value) in headers {
        // The handshake's own headers are the listener's.
        if ![
            CONNECTION,
            UPGRADE,
            SEC_WEBSOCKET_ACCEPT,
            SEC_WEBSOCKET_PROTOCOL,
        ]
        .contains(&name)
        {
            response.headers_mut().append(name, value);
        }
    }
    Ok(response)
}

fn refused(why: &str) -> ApiError {
    ApiError::PermissionDenied(format!("{why}; the connection is refused"))
}

fn broken(what: &str) -> ApiError {
    ApiError::FunctionFailed(format!(
        "the runner's websocket message from the ASGI app is not readable ({what}); is the \
         container's levers9 SDK the same version as the controlplane?"
    ))
}

/// The queue of the client's messages to the app.
struct Inbox {
    state: Arc<dyn HotState>,
    /// As the runner names it in its QueueGet.
    name: String,
    /// Where its items are.
    key: String,
}

impl Inbox {
    fn new(state: Arc<dyn HotState>, workspace_id: &str) -> Self {
        let name = format!("{INBOX_PREFIX}{}", uuid::Uuid::new_v4().simple());
        let key = keys::object(workspace_id, &name);
        Self { state, name, key }
    }

    /// Appends a client's message, waiting while the inbox is full.
    async fn push(&self, item: Vec<u8>) -> Result<(), String> {
        let items = [item];
        let mut pause = Duration::from_millis(5);
        loop {
            match self.state.push_capped(&self.key, &items, INBOX_ITEMS).await {
                Ok(Some(_)) => return Ok(()),
                Ok(None) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(error) => return Err(error.to_string()),
            }
        }
    }

    /// Appends the end of the connection, full or not.
    async fn end(&self, code: u16, reason: &str) {
        let item = messages::disconnect(code, reason);
        if let Err(error) = self.state.push(&self.key, &item).await {
            // The app's receive then waits until the task is cancelled.
            tracing::warn!(inbox = %self.name, %error, "cannot tell the app its websocket ended");
        }
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        let (state, key) = (self.state.clone(), std::mem::take(&mut self.key));
        // Dropped in the listener's tasks, so a runtime is there.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = state.queue_delete(&key).await;
            });
        }
    }
}

/// How the client's side ended.
#[derive(Debug)]
enum ClientEnd {
    /// It sent a close frame.
    Closed { code: u16, reason: String },
    /// A message over [`MAX_MESSAGE`] bytes.
    TooLarge(usize),
    /// The connection broke or was dropped without a close frame.
    Gone(String),
    /// Its message could not be put in the inbox.
    Lost(String),
}

/// One accepted connection.
struct Connection {
    rest: Rest,
    inbox: Inbox,
}

impl Connection {
    /// Passes messages both ways until either side ends the connection or
    /// the timeout nears.
    async fn relay(self, socket: WebSocket, ends_at: Instant, timeout: Duration) {
        let Connection { mut rest, inbox } = self;
        let inbox = Arc::new(inbox);
        let (mut sink, stream) = socket.split();
        // A task of its own: a full inbox must not stop the app's messages
        // reaching the client, or an app that sends before it receives and
        // a client that does the same would wait for each other.
        let mut upstream = tokio::spawn(client_to_app(stream, inbox.clone()));
        let mut app_closed = false;
        let client = loop {
            tokio::select! {
                event = rest.events.next() => {
                    if !app_to_client(&mut sink, &rest.receipts, event, &mut app_closed, ends_at).await {
                        // The app ended: the client's closing half, then done.
                        let _ = tokio::time::timeout(CLOSE_WAIT, &mut upstream).await;
                        upstream.abort();
                        return;
                    }
                }
                ended = &mut upstream => {
                    break ended.unwrap_or_else(|e| ClientEnd::Gone(e.to_string()));
                }
                () = tokio::time::sleep_until(ends_at) => {
                    let reason = format!("the function's timeout of {} s ends the connection", timeout.as_secs());
                    close(&mut sink, 1001, &reason).await;
                    inbox.end(1001, &reason).await;
                    let _ = tokio::time::timeout(CLOSE_WAIT, &mut upstream).await;
                    upstream.abort();
                    finish(rest).await;
                    return;
                }
            }
        };
        tracing::debug!(?client, inbox = %inbox.name, "a websocket's client side ended");
        let (code, reason) = match client {
            ClientEnd::Closed { code, reason } => {
                // Sends the reply to the client's close frame.
                let _ = tokio::time::timeout(CLOSE_WAIT, sink.close()).await;
                (code, reason)
            }
            ClientEnd::TooLarge(size) => {
                let reason =
                    format!("a message of {size} bytes is over the {MAX_MESSAGE}-byte limit");
                close(&mut sink, 1009, &reason).await;
                (1009, reason)
            }
            ClientEnd::Gone(why) => (1006, why),
            ClientEnd::Lost(why) => {
                let reason = format!("the controlplane could not pass a message on ({why})");
                close(&mut sink, 1011, &reason).await;
                (1011, reason)
            }
        };
        inbox.end(code, &reason).await;
        finish(rest).await;
    }
}

/// Sends the app's message (or its end) to the client; false once the
/// app's task ended (a close frame was sent then, the app's or one saying
/// why).
async fn app_to_client(
    sink: &mut SplitSink<WebSocket, Message>,
    receipts: &UnboundedSender<ItemsReceived>,
    event: Option<Result<RunEvent, Status>>,
    app_closed: &mut bool,
    ends_at: Instant,
) -> bool {
    let failure = match event {
        Some(Ok(RunEvent {
            kind: Some(run_event::Kind::Item(item)),
        })) => {
            let message = match FromApp::parse(item.payload.clone()) {
                Ok(FromApp::Text(text)) => Message::Text(text.into()),
                Ok(FromApp::Binary(data)) => Message::Binary(data.into()),
                Ok(FromApp::Close { code, reason }) => {
                    *app_closed = true;
                    close_frame(code, &reason)
                }
                Ok(FromApp::Accept { .. }) => {
                    taken(receipts, &item);
                    return true;
                }
                Err(problem) => {
                    tracing::warn!(%problem, "an unreadable websocket message from the runner");
                    close(sink, 1011, "the app's message was not readable").await;
                    return false;
                }
            };
            // A client gone is the other direction's to notice; a client
            // that does not read holds this one up to the timeout.
            let _ = tokio::time::timeout_at(ends_at, sink.send(message)).await;
            taken(receipts, &item);
            return true;
        }
        Some(Ok(RunEvent {
            kind: Some(run_event::Kind::Result(outcome)),
        })) if outcome.state() == FinalTaskState::Complete => None,
        Some(Ok(RunEvent {
            kind: Some(run_event::Kind::Result(outcome)),
        })) => Some(format!("the app failed: {}", outcome.message)),
        Some(Ok(_)) => return true,
        Some(Err(status)) => Some(status.message().to_owned()),
        None => Some("the call ended without a result".to_owned()),
    };
    if let Some(failure) = &failure {
        tracing::info!(%failure, "a websocket's app side ended early");
    }
    if !*app_closed {
        match failure {
            None => close(sink, 1000, "").await,
            Some(failure) => close(sink, 1011, &failure).await,
        }
    }
    false
}

fn close_frame(code: u16, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code: close_code(code),
        reason: close_reason(reason).into(),
    }))
}

/// Sends a close frame, unless the client does not take it in time.
async fn close(sink: &mut SplitSink<WebSocket, Message>, code: u16, reason: &str) {
    let _ = tokio::time::timeout(CLOSE_WAIT, sink.send(close_frame(code, reason))).await;
}

/// Lets the app end on its own within [`LEAVE_GRACE`]; its messages are
/// acknowledged (no one reads them) so that none holds it up. Dropping the
/// call afterwards cancels a task still running.
async fn finish(mut rest: Rest) {
    let ending = async {
        while let Some(Ok(event)) = rest.events.next().await {
            match event.kind {
                Some(run_event::Kind::Item(item)) => rest.taken(&item),
                Some(run_event::Kind::Result(_)) => return,
                _ => {}
            }
        }
    };
    if tokio::time::timeout(LEAVE_GRACE, ending).await.is_err() {
        tracing::info!("a websocket's app ran on after its client left; its task is cancelled");
    }
}

/// Puts the client's messages in the inbox until it ends its side.
async fn client_to_app(mut stream: SplitStream<WebSocket>, inbox: Arc<Inbox>) -> ClientEnd {
    while let Some(message) = stream.next().await {
        let item = match message {
            Ok(Message::Text(text)) if text.len() > MAX_MESSAGE => {
                return ClientEnd::TooLarge(text.len())
            }
            Ok(Message::Binary(data)) if data.len() > MAX_MESSAGE => {
                return ClientEnd::TooLarge(data.len())
            }
            Ok(Message::Text(text)) => messages::text(&text),
            Ok(Message::Binary(data)) => messages::binary(&data),
            Ok(Message::Close(frame)) => {
                let (code, reason) = frame
                    .map(|f| (f.code, f.reason.to_string()))
                    // No code in the frame: RFC 6455's "no status received".
                    .unwrap_or((1005, String::new()));
                return ClientEnd::Closed { code, reason };
            }
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            Err(error) => return ClientEnd::Gone(error.to_string()),
        };
        if let Err(error) = inbox.push(item).await {
            return ClientEnd::Lost(error);
        }
    }
    ClientEnd::Gone("the connection was dropped without a close frame".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_closes_before_the_timeout_by_a_wind_down() {
        assert_eq!(wind_down(Duration::from_secs(300)), Duration::from_secs(2));
        assert_eq!(wind_down(Duration::from_secs(4)), Duration::from_secs(1));
    }
}
