//! Tokens and workspaces: types, revocation, isolation between workspaces.

mod common;

use std::time::{Duration, Instant};

use common::{with_token, Backend, Controlplane};
use levers9_api::v1::{
    AuthorizeRequest, CreateTokenRequest, CreateWorkspaceRequest, GetWorkspaceRequest,
    ListTokensRequest, RevokeTokenRequest, RunRequest,
};
use tonic::Code;

async fn missing_token_is_unauthenticated_with_a_way_out(backend: Backend) {
    let cp = Controlplane::start(backend);
    let refused = cp
        .tokens()
        .await
        .list_tokens(ListTokensRequest {})
        .await
        .expect_err("no token");
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert!(
        refused.message().contains("levers9 token create"),
        "{}",
        refused.message()
    );

    let unknown = cp
        .tokens()
        .await
        .list_tokens(with_token(ListTokensRequest {}, "l9_not-a-real-token"))
        .await
        .expect_err("unknown token");
    assert_eq!(unknown.code(), Code::Unauthenticated);
    assert!(
        unknown.message().contains("unknown token"),
        "{}",
        unknown.message()
    );

    // A stream is refused before its first message, like a unary call.
    let stream = futures::stream::pending::<RunRequest>();
    let refused = cp
        .functions()
        .await
        .run(with_token(stream, "l9_not-a-real-token"))
        .await
        .expect_err("a Run stream with an unknown token");
    assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");

    // The REST mapping checks tokens the same way, as HTTP 401.
    let http = reqwest::Client::new();
    for token in [None, Some("l9_not-a-real-token")] {
        let mut get = http.get(cp.http("/api/v1/controlplane/tokens"));
        if let Some(token) = token {
            get = get.bearer_auth(token);
        }
        let answer = get.send().await.expect("GET tokens");
        assert_eq!(
            answer.status(),
            reqwest::StatusCode::UNAUTHORIZED,
            "{token:?}"
        );
        let body: serde_json::Value = answer.json().await.expect("json error");
        let message = body["message"].as_str().unwrap_or_default();
        let wanted = if token.is_some() {
            "unknown token"
        } else {
            "levers9 token create"
        };
        assert!(message.contains(wanted), "{token:?}: {body}");
    }
}

async fn revoked_token_is_refused(backend: Backend) {
    let cp = Controlplane::start(backend);
    let admin = cp.admin_token().await;
    let created = cp
        .tokens()
        .await
        .create_token(with_token(
            CreateTokenRequest {
                token_type: "workspace".into(),
                description: "ci".into(),
            },
            &admin,
        ))
        .await
        .expect("create")
        .into_inner();
    let secret = created.secret;
    let id = created.token.expect("token").id;
    cp.auth()
        .await
        .authorize(with_token(AuthorizeRequest {}, &secret))
        .await
        .expect("new token works");

    let revoked = cp
        .tokens()
        .await
        .revoke_token(with_token(
            RevokeTokenRequest {
                token_id: id.clone(),
            },
            &admin,
        ))
        .await
        .expect("revoke")
        .into_inner()
        .token
        .expect("token");
    assert!(!revoked.revoked_at.is_empty());

    let refused = cp
        .auth()
        .await
        .authorize(with_token(AuthorizeRequest {}, &secret))
        .await
        .expect_err("revoked");
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert!(
        refused.message().contains("revoked"),
        "{}",
        refused.message()
    );

    let listed = cp
        .tokens()
        .await
        .list_tokens(with_token(ListTokensRequest {}, &admin))
        .await
        .expect("list")
        .into_inner()
        .tokens;
    let row = listed.iter().find(|t| t.id == id).expect("still listed");
    assert!(!row.revoked_at.is_empty());
    let admin_row = listed
        .iter()
        .find(|t| t.token_type == "admin")
        .expect("admin");
    assert!(!admin_row.last_used_at.is_empty(), "last use is recorded");
}

async fn token_of_one_workspace_cannot_touch_another(backend: Backend) {
    let cp = Controlplane::start(backend);
    let admin_a = cp.admin_token().await;
    let b = cp
        .workspaces()
        .await
        .create_workspace(with_token(
            CreateWorkspaceRequest {
                name: "team-b".into(),
            },
            &admin_a,
        ))
        .await
        .expect("create workspace")
        .into_inner();
    let admin_b = b.admin_token;
    let a_tokens = cp
        .tokens()
        .await
        .list_tokens(with_token(ListTokensRequest {}, &admin_a))
        .await
        .expect("list a")
        .into_inner()
        .tokens;
    let b_tokens = cp
        .tokens()
        .await
        .list_tokens(with_token(ListTokensRequest {}, &admin_b))
        .await
        .expect("list b")
        .into_inner()
        .tokens;
    assert_eq!(a_tokens.len(), 1);
    assert_eq!(b_tokens.len(), 1);
    assert_ne!(a_tokens[0].workspace_id, b_tokens[0].workspace_id);

    // B cannot revoke A's token, and cannot tell it exists.
    let denied = cp
        .tokens()
        .await
        .revoke_token(with_token(
            RevokeTokenRequest {
                token_id: a_tokens[0].id.clone(),
            },
            &admin_b,
        ))
        .await
        .expect_err("cross-workspace revoke");
    assert_eq!(denied.code(), Code::NotFound);
    let missing = cp
        .tokens()
        .await
        .revoke_token(with_token(
            RevokeTokenRequest {
                token_id: "00000000-0000-0000-0000-000000000000".into(),
            },
            &admin_b,
        ))
        .await
        .expect_err("missing id");
    assert_eq!(
        missing
            .message()
            .replace("00000000-0000-0000-0000-000000000000", "ID"),
        denied.message().replace(&a_tokens[0].id, "ID")
    );

    let ws = cp
        .workspaces()
        .await
        .get_workspace(with_token(GetWorkspaceRequest {}, &admin_b))
        .await
        .expect("get")
        .into_inner()
        .workspace
        .expect("workspace");
    assert_eq!(ws.name, "team-b");
    cp.auth()
        .await
        .authorize(with_token(AuthorizeRequest {}, &admin_a))
        .await
        .expect("A's token still works");
}

async fn token_types_limit_what_a_token_can_do(backend: Backend) {
    let cp = Controlplane::start(backend);
    let admin = cp.admin_token().await;
    let create = |token_type: &str, by: &str| {
        let request = with_token(
            CreateTokenRequest {
                token_type: token_type.into(),
                description: String::new(),
            },
            by,
        );
        let cp = &cp;
        async move { cp.tokens().await.create_token(request).await }
    };
    let workspace = create("workspace", &admin)
        .await
        .expect("workspace")
        .into_inner()
        .secret;
    let worker = create("worker", &admin)
        .await
        .expect("worker")
        .into_inner()
        .secret;
    let refused = create("admin", &workspace).await.expect_err("escalation");
    assert_eq!(refused.code(), Code::PermissionDenied);
    let refused = create("workspace", &worker).await.expect_err("worker");
    assert_eq!(refused.code(), Code::PermissionDenied);
    let bad = create("root", &admin).await.expect_err("unknown type");
    assert_eq!(bad.code(), Code::InvalidArgument);
    assert!(bad
        .message()
        .contains("admin, workspace, worker or machine"));
    let refused = cp
        .workspaces()
        .await
        .create_workspace(with_token(
            CreateWorkspaceRequest { name: "x".into() },
            &workspace,
        ))
        .await
        .expect_err("only admins create workspaces");
    assert_eq!(refused.code(), Code::PermissionDenied);
}

/// Two replicas on one Postgres and Redis: a token revoked on one stops
/// working on the other within the token cache time.
#[tokio::test]
async fn revocation_reaches_another_replica_within_the_cache_time() {
    let mut env = common::backend_env(Backend::Servers);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), common::SECRET.into()));
    env.push(("LEVERS9_TOKEN_CACHE_SECONDS".into(), "1".into()));
    let one = Controlplane::start_with(env.clone());
    let two = Controlplane::start_with(env);
    let admin = one.admin_token().await;
    let created = one
        .tokens()
        .await
        .create_token(with_token(CreateTokenRequest::default(), &admin))
        .await
        .expect("create")
        .into_inner();
    two.auth()
        .await
        .authorize(with_token(AuthorizeRequest {}, &created.secret))
        .await
        .expect("cached on replica two");
    one.tokens()
        .await
        .revoke_token(with_token(
            RevokeTokenRequest {
                token_id: created.token.expect("token").id,
            },
            &admin,
        ))
        .await
        .expect("revoke on replica one");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let answer = two
            .auth()
            .await
            .authorize(with_token(AuthorizeRequest {}, &created.secret))
            .await;
        if let Err(status) = answer {
            assert_eq!(status.code(), Code::Unauthenticated);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "replica two still accepts the revoked token"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A controlplane killed and started again on the same records keeps every
/// workspace and token, and bootstrap stays done.
async fn records_survive_a_controlplane_restart(backend: Backend) {
    let data = tempfile::tempdir().expect("data dir");
    let mut env = common::backend_env(backend);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), common::SECRET.into()));
    env.push(("LEVERS9_DATA_DIR".into(), data.path().display().to_string()));
    let admin = {
        let first = Controlplane::start_with(env.clone());
        first.admin_token().await
        // Dropping it kills the process (SIGKILL): nothing gets to shut down cleanly.
    };
    let second = Controlplane::start_with(env);
    let answer = second
        .auth()
        .await
        .authorize(with_token(AuthorizeRequest {}, &admin))
        .await
        .expect("the token survives the restart")
        .into_inner();
    assert_eq!(answer.workspace_name, "default");
    let again = second
        .bootstrap(common::SECRET)
        .await
        .expect_err("bootstrap stays done");
    assert_eq!(again.code(), Code::FailedPrecondition);
}

on_both_backends!(
    records_survive_a_controlplane_restart,
    missing_token_is_unauthenticated_with_a_way_out,
    revoked_token_is_refused,
    token_of_one_workspace_cannot_touch_another,
    token_types_limit_what_a_token_can_do,
);
