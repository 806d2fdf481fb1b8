//! An `@asgi` FastAPI app (Debian's FastAPI, in the test image
//! `fastapi_image`) end to end: path parameters, pydantic bodies,
//! server-sent events, and its websockets.

use reqwest::StatusCode;
use serde_json::json;

use super::common::fleet::{fastapi_image, Worker};
use super::common::stubs::workspace_token;
use super::common::{text, Controlplane};
use super::{deploy, env, read_until, send, websockets, workspace_name};

/// A FastAPI app (Debian's FastAPI, in the test image `fastapi_image`):
/// a path parameter, a pydantic body, and server-sent events that wait for
/// the test to release the last one.
const FASTAPI_APP: &str = r#"import asyncio

from levers9 import asgi


@asgi(name="api", public=True, concurrency=4, max_containers=1)
def make_api():
    from fastapi import FastAPI, WebSocket, WebSocketDisconnect
    from fastapi.responses import StreamingResponse
    from pydantic import BaseModel

    api = FastAPI()
    released = asyncio.Event()
    sockets = {"finished": 0, "disconnected": 0}

    @api.websocket("/ws")
    async def echo(websocket: WebSocket):
        await websocket.accept()
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    raise WebSocketDisconnect(message["code"])
                if message.get("text") == "bye":
                    await websocket.close(code=4002, reason="bye")
                    return
                if message.get("text") is not None:
                    await websocket.send_text("echo: " + message["text"])
                else:
                    await websocket.send_bytes(message["bytes"][::-1])
        except WebSocketDisconnect:
            sockets["disconnected"] += 1
            raise
        finally:
            sockets["finished"] += 1

    @api.get("/finished")
    def finished():
        return sockets

    class Item(BaseModel):
        name: str
        price: float

    @api.get("/items/{item_id}")
    def read_item(item_id: int, q: str = ""):
        return {"item_id": item_id, "q": q}

    @api.post("/items")
    def create_item(item: Item):
        return {"name": item.name, "with_tax": round(item.price * 1.2, 2)}

    @api.post("/release")
    async def release():
        released.set()
        return {"released": True}

    @api.get("/events")
    async def events():
        async def stream():
            yield "data: first\n\n"
            await released.wait()
            yield "data: last\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    return api
"#;

#[tokio::test]
async fn a_fastapi_app_serves_path_parameters_pydantic_bodies_and_server_sent_events() {
    let cp = Controlplane::start_with(env(fastapi_image()));
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "runc").await;
    let user = workspace_token(&cp, &admin, "user").await;
    let code = tempfile::tempdir().expect("code");
    let file = code.path().join("api.py");
    std::fs::write(&file, FASTAPI_APP).expect("write app");
    let out = deploy(&cp, &user, &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let logs = || format!("{}\n--------\n{}", cp.log(), worker.log());
    let ws = workspace_name(&cp, &user).await;
    let api = cp.http(&format!("/endpoint/{ws}/api"));
    let http = reqwest::Client::new();

    let (status, body) = send(http.get(format!("{api}/items/7?q=x"))).await;
    assert_eq!(status, StatusCode::OK, "{body}\n{}", logs());
    assert_eq!(body, json!({"item_id": 7, "q": "x"}));
    // FastAPI's own validation answers are passed on as they are.
    let (status, body) = send(http.get(format!("{api}/items/seven"))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["path", "item_id"]));

    let (status, body) = send(
        http.post(format!("{api}/items"))
            .json(&json!({"name": "tea", "price": 2.5})),
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"name": "tea", "with_tax": 3.0}))
    );
    let (status, body) = send(
        http.post(format!("{api}/items"))
            .json(&json!({"name": "tea"})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["body", "price"]));

    // The first event arrives while the app waits for this test.
    let mut events = http
        .get(format!("{api}/events"))
        .send()
        .await
        .expect("request");
    assert_eq!(events.status(), StatusCode::OK);
    assert!(
        events.headers()["content-type"]
            .to_str()
            .unwrap_or_default()
            .starts_with("text/event-stream"),
        "{:?}",
        events.headers()
    );
    assert_eq!(
        read_until(&mut events, "\n\n").await,
        "data: first\n\n",
        "{}",
        logs()
    );
    let (status, body) = send(http.post(format!("{api}/release"))).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"released": true})));
    assert_eq!(events.text().await.expect("the rest"), "data: last\n\n");

    websockets::fastapi_app(&api, &logs).await;
}
