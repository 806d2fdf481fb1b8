//! The first token, as the product documentation describes it, over gRPC and
//! REST, on both backends.

mod common;

use common::{Backend, Controlplane, SECRET};
use levers9_api::v1::{AuthorizeRequest, ListTokensRequest};
use tonic::Code;

async fn bootstrap_over_grpc_returns_one_admin_token(backend: Backend) {
    let cp = Controlplane::start(backend);
    let first = cp.bootstrap(SECRET).await.expect("bootstrap");
    assert_eq!(first.token_type, "admin");
    assert_eq!(first.workspace_name, "default");
    assert!(first.new_token.starts_with("l9_"));

    let listed = cp
        .tokens()
        .await
        .list_tokens(common::with_token(ListTokensRequest {}, &first.new_token))
        .await
        .expect("the admin token works")
        .into_inner();
    assert_eq!(listed.tokens.len(), 1);
    assert_eq!(listed.tokens[0].token_type, "admin");

    // Once a workspace exists the secret does nothing.
    let again = cp.bootstrap(SECRET).await.expect_err("second bootstrap");
    assert_eq!(again.code(), Code::FailedPrecondition);
    assert!(
        again.message().contains("already has a workspace"),
        "{}",
        again.message()
    );
}

async fn bootstrap_over_rest_uses_the_grpc_metadata_header(backend: Backend) {
    let cp = Controlplane::start(backend);
    let http = reqwest::Client::new();
    let response = http
        .post(cp.http("/api/v1/controlplane/auth/authorize"))
        .header("Grpc-Metadata-X-Levers9-Bootstrap-Secret", SECRET)
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect("POST authorize");
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.expect("json");
    let token = body["newToken"].as_str().expect("newToken").to_owned();
    assert_eq!(body["tokenType"], "admin");

    let tokens: serde_json::Value = http
        .get(cp.http("/api/v1/controlplane/tokens"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("GET tokens")
        .json()
        .await
        .expect("json");
    assert_eq!(tokens["tokens"].as_array().expect("tokens").len(), 1);

    let again = http
        .post(cp.http("/api/v1/controlplane/auth/authorize"))
        .header("Grpc-Metadata-X-Levers9-Bootstrap-Secret", SECRET)
        .send()
        .await
        .expect("POST authorize");
    assert_eq!(again.status(), 400);
    let error: serde_json::Value = again.json().await.expect("json");
    assert_eq!(error["code"], Code::FailedPrecondition as i32);
}

async fn bootstrap_is_off_without_a_configured_secret(backend: Backend) {
    let cp = Controlplane::start_with(common::backend_env(backend));
    let refused = cp
        .bootstrap("anything")
        .await
        .expect_err("bootstrap is off");
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert!(
        refused
            .message()
            .starts_with("Bootstrap is off on this controlplane"),
        "{}",
        refused.message()
    );

    let response = reqwest::Client::new()
        .post(cp.http("/api/v1/controlplane/auth/authorize"))
        .send()
        .await
        .expect("POST authorize");
    assert_eq!(response.status(), 400);
    let body: serde_json::Value = response.json().await.expect("json");
    assert!(body["message"]
        .as_str()
        .expect("message")
        .starts_with("Bootstrap is off on this controlplane"));
}

async fn wrong_bootstrap_secret_is_refused_and_creates_nothing(backend: Backend) {
    let cp = Controlplane::start(backend);
    for wrong in ["", "e2e-bootstrap-secreT", "e2e-bootstrap-secret-and-more"] {
        let mut request = tonic::Request::new(AuthorizeRequest {});
        if !wrong.is_empty() {
            request
                .metadata_mut()
                .insert("x-levers9-bootstrap-secret", wrong.parse().expect("ascii"));
        }
        let refused = cp
            .auth()
            .await
            .authorize(request)
            .await
            .expect_err("wrong secret");
        assert_eq!(refused.code(), Code::PermissionDenied);
        assert!(!refused.message().contains(SECRET));
        assert!(!refused.message().contains("workspace exists"));
    }
    // Nothing was created: the right secret still bootstraps.
    cp.bootstrap(SECRET)
        .await
        .expect("bootstrap after refusals");
}

async fn racing_bootstrap_creates_exactly_one_workspace(backend: Backend) {
    let cp = Controlplane::start(backend);
    let calls = (0..16).map(|_| cp.bootstrap(SECRET));
    let answers = futures::future::join_all(calls).await;
    let winners: Vec<_> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
    assert_eq!(winners.len(), 1, "answers: {answers:?}");
    for loser in answers.iter().filter_map(|a| a.as_ref().err()) {
        assert_eq!(loser.code(), Code::FailedPrecondition, "{loser:?}");
    }
    let tokens = cp
        .tokens()
        .await
        .list_tokens(common::with_token(
            ListTokensRequest {},
            &winners[0].new_token,
        ))
        .await
        .expect("list")
        .into_inner()
        .tokens;
    assert_eq!(tokens.len(), 1);
}

on_both_backends!(
    bootstrap_over_grpc_returns_one_admin_token,
    bootstrap_over_rest_uses_the_grpc_metadata_header,
    bootstrap_is_off_without_a_configured_secret,
    wrong_bootstrap_secret_is_refused_and_creates_nothing,
    racing_bootstrap_creates_exactly_one_workspace,
);
