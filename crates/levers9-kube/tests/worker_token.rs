//! The requests the controlplane sends to keep a pool's worker token
//! Secret, checked against a scripted API server: each names the Secret
//! (so a Role can be limited to it), and the token is only ever in a body.

mod mock_api;

use http::Method;
use levers9_kube::{KubeError, WorkerTokenSecret};
use mock_api::{serve, Expect};
use serde_json::{json, Value};

const PATH: &str = "/api/v1/namespaces/levers9-workers/secrets/levers9-worker-token";

fn get(status: u16, answer: Value) -> Expect {
    Expect {
        method: Method::GET,
        path_and_query: PATH.into(),
        check_body: Box::new(|body| assert_eq!(body, &Value::Null)),
        status,
        answer,
    }
}

fn status(code: u16, reason: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
           "reason": reason, "code": code, "message": format!("secrets \"levers9-worker-token\" {reason}")})
}

fn secret(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": "levers9-worker-token", "namespace": "levers9-workers"},
           "type": "Opaque", "data": data})
}

#[tokio::test]
async fn a_missing_secret_reads_as_none_and_is_written_by_apply() {
    let (client, server) = serve(
        "levers9-workers",
        vec![
            get(404, status(404, "NotFound")),
            Expect {
                method: Method::PATCH,
                path_and_query: format!("{PATH}?&force=true&fieldManager=levers9-controlplane"),
                check_body: Box::new(|body| {
                    assert_eq!(body["kind"], "Secret");
                    assert_eq!(body["metadata"]["name"], "levers9-worker-token");
                    assert_eq!(body["metadata"]["namespace"], "levers9-workers");
                    assert_eq!(body["stringData"], json!({"token": "l9_fresh"}));
                }),
                status: 201,
                answer: secret(json!({"token": "bDlfZnJlc2g="})),
            },
        ],
    );
    let secret = WorkerTokenSecret::new(client, "levers9-workers", "levers9-worker-token");
    assert_eq!(secret.read().await.expect("read"), None);
    secret.write("l9_fresh").await.expect("write");
    server.await.expect("script used up");
}

#[tokio::test]
async fn the_token_is_read_from_its_key_and_an_empty_one_counts_as_none() {
    let (client, server) = serve(
        "levers9-workers",
        vec![
            // "l9_live\n": a Secret made by hand with a trailing newline.
            get(200, secret(json!({"token": "bDlfbGl2ZQo="}))),
            get(200, secret(json!({"other": "eA=="}))),
            get(200, secret(json!({"token": ""}))),
        ],
    );
    let secret = WorkerTokenSecret::new(client, "levers9-workers", "levers9-worker-token");
    assert_eq!(
        secret.read().await.expect("read").as_deref(),
        Some("l9_live")
    );
    assert_eq!(secret.read().await.expect("read"), None);
    assert_eq!(secret.read().await.expect("read"), None);
    server.await.expect("script used up");
}

#[tokio::test]
async fn a_forbidden_read_says_which_rights_the_service_account_needs() {
    let (client, server) = serve("levers9-workers", vec![get(403, status(403, "Forbidden"))]);
    let secret = WorkerTokenSecret::new(client, "levers9-workers", "levers9-worker-token");
    let error = secret.read().await.expect_err("forbidden");
    assert!(matches!(error, KubeError::TokenSecret { verb: "read", .. }));
    let message = error.to_string();
    assert!(
        message.contains("levers9-workers/levers9-worker-token")
            && message.contains("get, create and patch on secrets named levers9-worker-token"),
        "{message}"
    );
    server.await.expect("script used up");
}
