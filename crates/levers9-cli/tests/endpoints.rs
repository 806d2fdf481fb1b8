//! Web endpoints end to end, with a real controlplane, a runc worker and a
//! real HTTP client: functions deployed with `@endpoint` through the SDK
//! (`levers9 deploy`) answer POSTed JSON and GET query parameters with
//! their value as JSON; private ones need a token of their workspace (none
//! or a wrong one is 401, another workspace's is 404 like a name that does
//! not exist); a body that is not a JSON object is 400; the function's
//! exception is 500 with its type and message; its timeout is 504. An
//! `@asgi` app (a plain ASGI callable, and a FastAPI app on an image with
//! Debian's FastAPI) gets whole requests under its path and answers them
//! itself, whole or streamed (server-sent events reach the client as the
//! app sends them; a client that leaves stops the app's request), and
//! serves websockets (see `endpoints/websockets.rs`). The FastAPI app:
//! `endpoints/fastapi.rs`; paths pinned to a version of the app:
//! `endpoints/versions.rs`; a gVisor worker: `endpoints/gvisor.rs`.

mod common;
#[path = "endpoints/fastapi.rs"]
mod fastapi;
#[path = "endpoints/gvisor.rs"]
mod gvisor;
#[path = "endpoints/versions.rs"]
mod versions;
#[path = "endpoints/websockets.rs"]
mod websockets;

use std::path::Path;

use common::fleet::{python_image, Worker};
use common::stubs::{other_workspace, workspace_token};
use common::{backend_env, text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::GetWorkspaceRequest;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// The app: a private endpoint, public ones, one that fails, one that
/// runs past its timeout, and a plain function (not served).
const APP: &str = r#"import json

from levers9 import asgi, endpoint, function


@endpoint(name="greet")
def greet(name="world", excited=False):
    return {"greeting": "hello " + name + ("!" if excited else "")}


@endpoint(name="open-greet", public=True)
async def open_greet(name="world"):
    return {"greeting": "hi " + name}


@endpoint(name="fail", public=True)
def fail(reason="none"):
    raise ValueError("refused: " + reason)


@endpoint(name="slow", public=True, timeout=2)
def slow():
    import time

    time.sleep(60)


@function
def plain(x):
    return x


async def echo_app(scope, receive, send):
    if scope["type"] != "http":
        return
    request = await receive()
    body = json.dumps({
        "method": scope["method"],
        "path": scope["path"],
        "query": scope["query_string"].decode(),
        "body": request["body"].decode(),
        "authorization": dict(scope["headers"]).get(b"authorization", b"").decode(),
    }).encode()
    await send({
        "type": "http.response.start",
        "status": 202,
        "headers": [(b"content-type", b"application/json"), (b"x-app", b"echo")],
    })
    await send({"type": "http.response.body", "body": body})


@asgi(name="app")
def make_app():
    return echo_app


@asgi(name="open-app", public=True)
def make_open_app():
    return echo_app


@asgi(name="events", public=True, concurrency=4, max_containers=1)
def make_events():
    import asyncio

    released = asyncio.Event()
    ended = []
    bulk_sent = [0]

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path in ("/release", "/ended", "/bulk-sent"):
            if path == "/release":
                released.set()
            answer = bulk_sent[0] if path == "/bulk-sent" else ended
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": json.dumps(answer).encode()})
            return
        if path == "/bulk":
            # 100 MiB in 256 KiB chunks, as fast as it is let.
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for _ in range(400):
                await send({"type": "http.response.body", "body": bytes(256 * 1024), "more_body": True})
                bulk_sent[0] += 1
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        try:
            await send({"type": "http.response.body", "body": b"data: first\n\n", "more_body": True})
            if path == "/broken":
                raise RuntimeError("broke mid-stream")
            if path == "/forever":
                await asyncio.Event().wait()
            await released.wait()
            await send({"type": "http.response.body", "body": b"data: last\n\n", "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            ended.append(path)

    return app
"#;

/// A controlplane environment with `image` as the functions' base image.
fn env(image: String) -> Vec<(String, String)> {
    let mut env = backend_env(Backend::Embedded);
    let (registry, name) = image.split_once('/').expect("image has a registry");
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    env.push(("LEVERS9_BASE_IMAGE_REGISTRY".into(), registry.into()));
    env.push(("LEVERS9_BASE_IMAGE".into(), name.into()));
    env
}

/// Runs `levers9 deploy FILE` as `token`, with the SDK from this tree.
fn deploy(cp: &Controlplane, token: &str, file: &Path) -> std::process::Output {
    let python = std::env::var("LEVERS9_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("LEVERS9_TEST_PYTHON is not set: run the tests with scripts/test.sh (make test)")
    });
    let home = tempfile::tempdir().expect("home");
    let port = cp.grpc_port.to_string();
    let sdk = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk/python");
    let env = [
        ("LEVERS9_TOKEN", token),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
        ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
        ("LEVERS9_PYTHON", python.as_str()),
        ("PYTHONPATH", sdk),
    ];
    let file = file.to_str().expect("utf-8 path");
    cp.cli(home.path(), &["deploy", file], &env, None)
}

async fn workspace_name(cp: &Controlplane, token: &str) -> String {
    cp.workspaces()
        .await
        .get_workspace(with_token(GetWorkspaceRequest {}, token))
        .await
        .expect("get workspace")
        .into_inner()
        .workspace
        .expect("a workspace")
        .name
}

/// One request: its status and its body as JSON.
async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.expect("request");
    let status = response.status();
    let body = response.bytes().await.expect("body");
    let value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| panic!("{status}: not JSON: {}", String::from_utf8_lossy(&body)));
    (status, value)
}

fn message(body: &Value) -> &str {
    body["message"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn deployed_endpoints_answer_json_over_http_with_tokens_errors_and_timeouts() {
    let cp = Controlplane::start_with(env(python_image()));
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "runc").await;
    let user = workspace_token(&cp, &admin, "user").await;
    let stranger = other_workspace(&cp, &admin, "elsewhere").await;
    let code = tempfile::tempdir().expect("code");
    let file = code.path().join("web.py");
    std::fs::write(&file, APP).expect("write app");
    let out = deploy(&cp, &user, &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let logs = || format!("{}\n--------\n{}", cp.log(), worker.log());

    let ws = workspace_name(&cp, &user).await;
    let url = |name: &str| cp.http(&format!("/endpoint/{ws}/{name}"));
    let http = reqwest::Client::new();
    let bearer = |token: &str| format!("Bearer {token}");

    // A private endpoint with the workspace's token: POST and GET.
    let (status, body) = send(
        http.post(url("greet"))
            .header("authorization", bearer(&user))
            .json(&json!({"name": "Ada", "excited": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}\n{}", logs());
    assert_eq!(body, json!({"greeting": "hello Ada!"}));
    let (status, body) = send(
        http.get(format!("{}?name=Bob", url("greet")))
            .header("authorization", bearer(&user)),
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"greeting": "hello Bob"}))
    );

    // Without a valid token: 401, whether the name exists or not.
    for (name, token) in [
        ("greet", None),
        ("greet", Some("not-a-token")),
        ("no-such-endpoint", None),
    ] {
        let mut request = http.post(url(name)).json(&json!({}));
        if let Some(token) = token {
            request = request.header("authorization", bearer(token));
        }
        let (status, body) = send(request).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name} {token:?}: {body}");
    }
    // Another workspace's token and a name that does not exist: 404 alike.
    for (name, token) in [("greet", &stranger), ("no-such-endpoint", &user)] {
        let (status, body) = send(
            http.post(url(name))
                .header("authorization", bearer(token))
                .json(&json!({})),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}: {body}");
        assert!(
            message(&body).starts_with(&format!("no endpoint {name:?} in workspace {ws:?}")),
            "{body}"
        );
    }
    // A plain function of the app is not served.
    let (status, _) = send(
        http.post(url("plain"))
            .header("authorization", bearer(&user))
            .json(&json!({"x": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A public endpoint needs no token (an async function here).
    let (status, body) = send(http.post(url("open-greet")).json(&json!({"name": "Cy"}))).await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"greeting": "hi Cy"}))
    );

    // A body that is not a JSON object: 400 saying why.
    for (raw, says) in [
        ("{\"name\": ", "the body is not valid JSON ("),
        ("[1, 2]", "the body is a JSON array, not an object"),
    ] {
        let (status, body) = send(
            http.post(url("open-greet"))
                .header("content-type", "application/json")
                .body(raw),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(message(&body).starts_with(says), "{body}");
    }

    // The function's exception: 500 with its type and message.
    let (status, body) = send(http.post(url("fail")).json(&json!({"reason": "bad day"}))).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert_eq!(message(&body), "ValueError: refused: bad day", "{body}");

    // Arguments the function does not take fail the call the same way.
    let (status, body) = send(http.post(url("open-greet")).json(&json!({"nom": "x"}))).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(
        message(&body).starts_with("TypeError: ") && message(&body).contains("'nom'"),
        "{body}"
    );

    // Past its timeout: 504.
    let (status, body) = send(http.post(url("slow"))).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}\n{}", logs());

    // An ASGI app gets the whole request under its path, and its answer is
    // the caller's; the workspace token does not reach it.
    let response = http
        .put(format!("{}/items/a%20b?x=1", url("app")))
        .header("authorization", bearer(&user))
        .body("raw body")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::ACCEPTED, "{}", logs());
    assert_eq!(response.headers()["x-app"], "echo");
    let body: Value = response.json().await.expect("json");
    assert_eq!(
        body,
        json!({"method": "PUT", "path": "/items/a b", "query": "x=1", "body": "raw body",
               "authorization": ""})
    );
    let (status, _) = send(http.get(url("app"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // A public app sees every header, its own auth scheme's included.
    let (status, body) = send(
        http.delete(format!("{}/", url("open-app")))
            .header("authorization", "Basic dXNlcjpwdw=="),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(
        (&body["method"], &body["path"], &body["authorization"]),
        (&json!("DELETE"), &json!("/"), &json!("Basic dXNlcjpwdw=="))
    );
    // A JSON endpoint has no paths under its own, and takes GET and POST.
    let (status, _) = send(http.post(format!("{}/more", url("open-greet")))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = send(http.put(url("open-greet"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        message(&body).contains("takes GET or POST, not PUT"),
        "{body}"
    );

    streamed_answers(&http, &url("events"), &logs).await;
}

/// Reads `response`'s body until it holds `until` (or ends); what it read.
/// Within 30 s: a streamed answer held back until its end would never let
/// the app finish.
async fn read_until(response: &mut reqwest::Response, until: &str) -> String {
    let mut read = String::new();
    let reading = async {
        while !read.contains(until) {
            match response.chunk().await.expect("a chunk") {
                Some(chunk) => read.push_str(&String::from_utf8_lossy(&chunk)),
                None => break,
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), reading)
        .await
        .unwrap_or_else(|_| panic!("nothing of the answer came within 30 s"));
    read
}

/// The `events` app's chunks of a bulk answer.
const CHUNK: usize = 256 * 1024;

/// The `events` app at `app`: its first event arrives while it waits for
/// the test to release it; a client that leaves mid-stream ends the app's
/// request; a slow client holds the app back; a failure after the head
/// ends the body abruptly.
async fn streamed_answers(http: &reqwest::Client, app: &str, logs: &dyn Fn() -> String) {
    let mut stream = http
        .get(format!("{app}/stream"))
        .send()
        .await
        .expect("request");
    assert_eq!(stream.status(), StatusCode::OK, "{}", logs());
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    assert_eq!(
        read_until(&mut stream, "\n\n").await,
        "data: first\n\n",
        "{}",
        logs()
    );
    // The app is still waiting: only this request releases it.
    let released = http
        .post(format!("{app}/release"))
        .send()
        .await
        .expect("release");
    assert_eq!(released.text().await.expect("text"), "[]");
    assert_eq!(
        stream.text().await.expect("the rest"),
        "data: last\n\n",
        "{}",
        logs()
    );

    let mut forever = http
        .get(format!("{app}/forever"))
        .send()
        .await
        .expect("request");
    assert_eq!(read_until(&mut forever, "\n\n").await, "data: first\n\n");
    drop(forever);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let ended: Value = http
            .get(format!("{app}/ended"))
            .send()
            .await
            .expect("request")
            .json()
            .await
            .expect("json");
        if ended == json!(["/stream", "/forever"]) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the app's request went on after its client left: {ended}\n{}",
            logs()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // A client that reads slowly holds the app back: it is never more than
    // the runner's window (16 chunks) and what the sockets and the
    // listener buffer (up to about 10 MiB on loopback) ahead of what the
    // client has read: at most 37 to 42 chunks ahead were seen. Without the
    // window it ran 83 chunks ahead before the client had read one.
    let mut bulk = http
        .get(format!("{app}/bulk"))
        .send()
        .await
        .expect("request");
    let mut read = 0;
    while read < 80 * CHUNK {
        read += bulk.chunk().await.expect("a chunk").expect("more").len();
        let sent: u64 = http
            .get(format!("{app}/bulk-sent"))
            .send()
            .await
            .expect("request")
            .json()
            .await
            .expect("json");
        let ahead = sent.saturating_sub((read / CHUNK) as u64);
        assert!(
            ahead <= 96,
            "the app ran {ahead} chunks ahead of a client that read {read} bytes"
        );
    }
    drop(bulk);

    // The head may or may not reach the client before the end of the
    // connection; either way the answer never looks complete.
    let broken = async {
        let response = http.get(format!("{app}/broken")).send().await?;
        response.bytes().await
    };
    let broken = broken.await;
    assert!(
        broken.is_err(),
        "a failure after the head must not end the body as if it were complete: {broken:?}"
    );
}
