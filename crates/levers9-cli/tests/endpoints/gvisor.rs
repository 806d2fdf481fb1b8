//! Web endpoints on a gVisor worker: a JSON `@endpoint` and an `@asgi` app
//! (a plain ASGI callable) answer over HTTP from containers run by runsc,
//! as they do from runc's (`deployed_endpoints_answer_json_…`).

use reqwest::StatusCode;
use serde_json::json;

use super::common::fleet::{python_image, Worker};
use super::common::stubs::workspace_token;
use super::common::{text, Controlplane};
use super::{deploy, env, send, workspace_name};

/// A private JSON endpoint and a public ASGI app that says what it got.
const GVISOR_APP: &str = r#"import json

from levers9 import asgi, endpoint


@endpoint(name="greet")
def greet(name="world"):
    return {"greeting": "hello " + name}


async def echo_app(scope, receive, send):
    if scope["type"] != "http":
        return
    request = await receive()
    body = json.dumps({
        "method": scope["method"],
        "path": scope["path"],
        "body": request["body"].decode(),
    }).encode()
    await send({
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", b"application/json")],
    })
    await send({"type": "http.response.body", "body": body})


@asgi(name="app", public=True)
def make_app():
    return echo_app
"#;

#[tokio::test]
async fn a_json_endpoint_and_an_asgi_app_answer_from_a_gvisor_worker() {
    let cp = Controlplane::start_with(env(python_image()));
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "gvisor").await;
    let user = workspace_token(&cp, &admin, "user").await;
    let code = tempfile::tempdir().expect("code");
    let file = code.path().join("web.py");
    std::fs::write(&file, GVISOR_APP).expect("write app");
    let out = deploy(&cp, &user, &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let logs = || format!("{}\n--------\n{}", cp.log(), worker.log());
    let ws = workspace_name(&cp, &user).await;
    let url = |name: &str| cp.http(&format!("/endpoint/{ws}/{name}"));
    let http = reqwest::Client::new();

    let (status, body) = send(
        http.post(url("greet"))
            .header("authorization", format!("Bearer {user}"))
            .json(&json!({"name": "Ada"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}\n{}", logs());
    assert_eq!(body, json!({"greeting": "hello Ada"}));

    let (status, body) = send(http.put(format!("{}/items/7", url("app"))).body("raw")).await;
    assert_eq!(status, StatusCode::OK, "{body}\n{}", logs());
    assert_eq!(
        body,
        json!({"method": "PUT", "path": "/items/7", "body": "raw"})
    );
}
