//! Websockets to `@asgi` apps end to end, with a real websocket client
//! (tokio-tungstenite) against the controlplane's HTTP listener: the
//! handshake is authorized as an HTTP request is; messages go both ways in
//! order; a client that closes reaches the app as `websocket.disconnect`
//! (its `finally` runs); the app's close code reaches the client; a message
//! over the limit and the function's timeout close the connection saying
//! why; each connection is a task.

use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::common::fleet::{python_image, Worker};
use super::common::stubs::{other_workspace, workspace_token};
use super::common::{text, Controlplane};
use super::{deploy, env, workspace_name};

#[tokio::test]
async fn websockets_to_an_asgi_app_carry_messages_both_ways_and_close_from_either_side() {
    let cp = Controlplane::start_with(env(python_image()));
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "runc").await;
    let user = workspace_token(&cp, &admin, "user").await;
    let stranger = other_workspace(&cp, &admin, "elsewhere").await;
    let code = tempfile::tempdir().expect("code");
    let file = code.path().join("chat.py");
    std::fs::write(&file, WS_APP).expect("write app");
    let out = deploy(&cp, &user, &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let logs = || format!("{}\n--------\n{}", cp.log(), worker.log());
    let cli = |args: &[&str]| {
        let out = cp.cli_as(&user, args, None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let ws = workspace_name(&cp, &user).await;
    let url = |name: &str| cp.http(&format!("/endpoint/{ws}/{name}"));
    plain_app(&url("chat"), &url("brief"), &user, &stranger, &cli, &logs).await;
}

/// A plain ASGI app (no framework): `chat` echoes, answers a burst, closes
/// when asked, and reports which connections ended; `brief` runs past its
/// 4 s timeout.
const WS_APP: &str = r#"import json

from levers9 import asgi

ended = []


async def chat(scope, receive, send):
    if scope["type"] != "websocket":
        return
    await receive()
    await send({"type": "websocket.accept", "subprotocol": "chat"})
    await send({"type": "websocket.send", "text": json.dumps(
        {"path": scope["path"], "query": scope["query_string"].decode(),
         "authorization": dict(scope["headers"]).get(b"authorization", b"").decode()})})
    try:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                ended.append([scope["path"], message["code"]])
                return
            text = message.get("text")
            if text == "ended?":
                await send({"type": "websocket.send", "text": json.dumps(ended)})
            elif text == "close":
                await send({"type": "websocket.close", "code": 4001, "reason": "asked to"})
                ended.append([scope["path"], "closed"])
                return
            elif text is not None and text.startswith("burst "):
                for i in range(int(text.split()[1])):
                    await send({"type": "websocket.send", "text": f"burst {i}"})
            elif text is not None:
                await send({"type": "websocket.send", "text": "echo: " + text})
            else:
                await send({"type": "websocket.send", "bytes": message["bytes"][::-1]})
    finally:
        ended.append([scope["path"], "finally"])


@asgi(name="chat", concurrency=4, max_containers=1)
def make_chat():
    return chat


@asgi(name="brief", public=True, timeout=4)
def make_brief():
    async def app(scope, receive, send):
        if scope["type"] != "websocket":
            return
        await receive()
        await send({"type": "websocket.accept"})
        message = await receive()
        assert message["type"] == "websocket.disconnect", message
        print("told", message["code"], message["reason"])

    return app
"#;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Opens a websocket to `url` (http://), with `token` as a bearer token;
/// one to the `chat` app asks for its subprotocol.
async fn connect(url: &str, token: Option<&str>) -> Result<Socket, WsError> {
    let chat = url.contains("/chat");
    let url = url.replacen("http://", "ws://", 1);
    let mut request = url.into_client_request().expect("a websocket request");
    if chat {
        // The client insists on the one the server chose, as it should.
        request
            .headers_mut()
            .insert("sec-websocket-protocol", "chat".parse().expect("header"));
    }
    if let Some(token) = token {
        let bearer = format!("Bearer {token}").parse().expect("header");
        request.headers_mut().insert("authorization", bearer);
    }
    let connecting = tokio_tungstenite::connect_async(request);
    let (socket, _) = tokio::time::timeout(Duration::from_secs(60), connecting)
        .await
        .expect("an answer to the handshake within 60 s")?;
    Ok(socket)
}

/// The next message that is not a ping or pong, within 30 s.
async fn next(socket: &mut Socket) -> Message {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .expect("a message within 30 s")
            .expect("the connection is open")
            .expect("a message");
        if !matches!(message, Message::Ping(_) | Message::Pong(_)) {
            return message;
        }
    }
}

async fn next_text(socket: &mut Socket) -> String {
    match next(socket).await {
        Message::Text(text) => text.to_string(),
        other => panic!("not a text message: {other:?}"),
    }
}

/// The close frame the server sends next.
async fn closed_with(socket: &mut Socket) -> (u16, String) {
    match next(socket).await {
        Message::Close(Some(CloseFrame { code, reason })) => (u16::from(code), reason.to_string()),
        other => panic!("not a close frame: {other:?}"),
    }
}

/// The status a refused handshake got.
fn refused(result: Result<Socket, WsError>) -> StatusCode {
    match result {
        Err(WsError::Http(response)) => {
            StatusCode::from_u16(response.status().as_u16()).expect("a status")
        }
        Err(other) => panic!("the handshake failed otherwise: {other}"),
        Ok(_) => panic!("the handshake was accepted"),
    }
}

/// The `chat` and `brief` apps of [`WS_APP`], deployed by `user`; `chat` at
/// `chat`, `brief` at `brief`. `stranger` is a token of another workspace;
/// `cli` runs a command of the CLI as `user`.
async fn plain_app(
    chat: &str,
    brief: &str,
    user: &str,
    stranger: &str,
    cli: &dyn Fn(&[&str]) -> String,
    logs: &dyn Fn() -> String,
) {
    // Tokens as for HTTP: none is 401, another workspace's 404.
    assert_eq!(refused(connect(chat, None).await), StatusCode::UNAUTHORIZED);
    assert_eq!(
        refused(connect(chat, Some(stranger)).await),
        StatusCode::NOT_FOUND
    );

    let mut socket = connect(&format!("{chat}/room?x=1"), Some(user))
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", logs()));
    let hello: Value = serde_json::from_str(&next_text(&mut socket).await).expect("json");
    // The app sees its path and query, never the workspace token.
    assert_eq!(
        hello,
        json!({"path": "/room", "query": "x=1", "authorization": ""})
    );
    // Several messages each way, in order.
    for text in ["one", "two", "three"] {
        socket.send(Message::text(text)).await.expect("send");
    }
    socket
        .send(Message::binary(vec![1u8, 2, 3]))
        .await
        .expect("send");
    for text in ["echo: one", "echo: two", "echo: three"] {
        assert_eq!(next_text(&mut socket).await, text);
    }
    assert_eq!(next(&mut socket).await, Message::binary(vec![3u8, 2, 1]));
    socket.send(Message::text("burst 40")).await.expect("send");
    for i in 0..40 {
        assert_eq!(next_text(&mut socket).await, format!("burst {i}"));
    }
    // The connection is a task while it lasts; its inbox is no queue of
    // the workspace's.
    let listed = cli(&["task", "list"]);
    assert!(listed.contains("make_chat"), "{listed}");
    let queues = cli(&["queue", "list"]);
    assert!(!queues.contains("inbox"), "{queues}");

    // The client closes: the app gets websocket.disconnect, its finally runs.
    socket.close(None).await.expect("close");
    let mut watcher = connect(chat, Some(user)).await.expect("connect");
    next_text(&mut watcher).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        watcher.send(Message::text("ended?")).await.expect("send");
        let ended: Value = serde_json::from_str(&next_text(&mut watcher).await).expect("json");
        if ended == json!([["/room", 1005], ["/room", "finally"]]) {
            break;
        }
        assert!(Instant::now() < deadline, "{ended}\n{}", logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The app closes with its code and reason.
    watcher.send(Message::text("close")).await.expect("send");
    assert_eq!(
        closed_with(&mut watcher).await,
        (4001, "asked to".to_owned())
    );

    // A message over 1 MiB closes the connection saying why.
    let mut big = connect(chat, Some(user)).await.expect("connect");
    next_text(&mut big).await;
    big.send(Message::binary(vec![0u8; (1 << 20) + 1]))
        .await
        .expect("send");
    assert_eq!(
        closed_with(&mut big).await,
        (
            1009,
            "a message of 1048577 bytes is over the 1048576-byte limit".to_owned()
        )
    );

    // The function's timeout (4 s) ends the connection, with time for the
    // app to hear of it.
    let mut brief = connect(brief, None).await.expect("connect");
    let started = Instant::now();
    assert_eq!(
        closed_with(&mut brief).await,
        (
            1001,
            "the function's timeout of 4 s ends the connection".to_owned()
        )
    );
    let lasted = started.elapsed();
    assert!(
        lasted > Duration::from_secs(2) && lasted < Duration::from_secs(4),
        "{lasted:?}"
    );
}

/// The FastAPI app's `/ws` route at `url`: an echo that closes with 4002
/// when told "bye", and counts the connections whose `finally` ran.
pub async fn fastapi_app(url: &str, logs: &dyn Fn() -> String) {
    let mut socket = connect(&format!("{url}/ws"), None)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", logs()));
    for text in ["a", "b", "c"] {
        socket.send(Message::text(text)).await.expect("send");
    }
    for text in ["echo: a", "echo: b", "echo: c"] {
        assert_eq!(next_text(&mut socket).await, text);
    }
    socket
        .send(Message::binary(vec![7u8, 8]))
        .await
        .expect("send");
    assert_eq!(next(&mut socket).await, Message::binary(vec![8u8, 7]));
    socket.send(Message::text("bye")).await.expect("send");
    assert_eq!(closed_with(&mut socket).await, (4002, "bye".to_owned()));

    // A client that leaves: the route's WebSocketDisconnect, its finally.
    let mut leaving = connect(&format!("{url}/ws"), None).await.expect("connect");
    leaving.send(Message::text("x")).await.expect("send");
    assert_eq!(next_text(&mut leaving).await, "echo: x");
    leaving.close(None).await.expect("close");
    drop(leaving);
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let finished: Value = http
            .get(format!("{url}/finished"))
            .send()
            .await
            .expect("request")
            .json()
            .await
            .expect("json");
        if finished == json!({"finished": 2, "disconnected": 1}) {
            break;
        }
        assert!(Instant::now() < deadline, "{finished}\n{}", logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
