//! Paths pinned to a version of the app, end to end:
//! `/endpoint/<workspace>/<name>@<version>` calls the endpoint as that
//! version served it (its stub then, public or not as it was then), while
//! the plain path follows the current version; a version that did not
//! serve it is a 404 that names the versions that did.

use reqwest::StatusCode;
use serde_json::json;

use super::common::fleet::{python_image, Worker};
use super::common::stubs::{other_workspace, workspace_token};
use super::common::{text, Controlplane};
use super::{deploy, env, message, send, workspace_name};

/// Version `VERSION` of the app: `greet` (public in version 1 only) and
/// an ASGI app `api` that say which version answers.
const VERSIONED_APP: &str = r#"import json

from levers9 import asgi, endpoint

VERSION = 0


@endpoint(name="greet", public=VERSION == 1)
def greet(name="world"):
    return {"greeting": "hello " + name, "version": VERSION}


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await receive()
    body = json.dumps({"path": scope["path"], "version": VERSION}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


@asgi(name="api", public=True)
def make_api():
    return app
"#;

#[tokio::test]
async fn a_path_pinned_to_a_version_calls_the_endpoint_as_that_version_served_it() {
    let cp = Controlplane::start_with(env(python_image()));
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "runc").await;
    let user = workspace_token(&cp, &admin, "user").await;
    let stranger = other_workspace(&cp, &admin, "elsewhere").await;
    let code = tempfile::tempdir().expect("code");
    for version in ["1", "2"] {
        // A directory each: Python would take the second file of one size
        // written within the second for the first one's cached bytecode.
        let dir = code.path().join(version);
        std::fs::create_dir(&dir).expect("dir");
        let file = dir.join("versioned.py");
        let source = VERSIONED_APP.replace("VERSION = 0", &format!("VERSION = {version}"));
        std::fs::write(&file, source).expect("write app");
        let out = deploy(&cp, &user, &file);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains(&format!("version {version}")),
            "{}",
            text(&out.stdout)
        );
    }
    let logs = || format!("{}\n--------\n{}", cp.log(), worker.log());
    let ws = workspace_name(&cp, &user).await;
    let url = |path: &str| cp.http(&format!("/endpoint/{ws}/{path}"));
    let http = reqwest::Client::new();
    let bearer = |token: &str| format!("Bearer {token}");
    let greet = |path: &str, token: Option<&str>| {
        let mut request = http.post(url(path)).json(&json!({"name": "Ada"}));
        if let Some(token) = token {
            request = request.header("authorization", bearer(token));
        }
        send(request)
    };
    let answer = |version: u32| json!({"greeting": "hello Ada", "version": version});

    // The plain path follows the current version; a pinned one keeps its own.
    let (status, body) = greet("greet", Some(&user)).await;
    assert_eq!((status, &body), (StatusCode::OK, &answer(2)), "{}", logs());
    let (status, body) = greet("greet@1", Some(&user)).await;
    assert_eq!((status, &body), (StatusCode::OK, &answer(1)), "{}", logs());
    let (status, body) = greet("greet@2", Some(&user)).await;
    assert_eq!((status, body), (StatusCode::OK, answer(2)));

    // Who may call is as that version said: public in 1, private in 2.
    let (status, body) = greet("greet@1", None).await;
    assert_eq!((status, body), (StatusCode::OK, answer(1)));
    for path in ["greet", "greet@2", "greet@9", "nothing@1"] {
        let (status, body) = greet(path, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}: {body}");
    }

    // A version that did not serve it: 404 naming the versions that did.
    let (status, body) = greet("greet@9", Some(&user)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        message(&body).starts_with(&format!(
            "endpoint \"greet\" of workspace {ws:?} has no version 9: "
        )) && message(&body).contains("(it served it in versions 1-2)")
            && message(&body).contains("drop \"@9\" from the path"),
        "{body}"
    );
    // Another workspace's token on a private version's path (or a missing
    // one), and a name no app serves: 404 alike, naming no versions.
    for (path, token) in [
        ("greet@2", &stranger),
        ("greet@9", &stranger),
        ("nothing@1", &user),
    ] {
        let (status, body) = greet(path, Some(token)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        let name = path.split('@').next().unwrap_or_default();
        assert!(
            message(&body).starts_with(&format!("no endpoint {name:?} in workspace {ws:?}")),
            "{body}"
        );
    }
    // A pin that is not a version number.
    let (status, body) = greet("greet@v1", Some(&user)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(message(&body).contains("pins no version"), "{body}");

    // An ASGI app: the paths under a pinned name go to that version.
    for (path, version) in [
        ("api/items/7", 2),
        ("api@1/items/7", 1),
        ("api@2/items/7", 2),
    ] {
        let (status, body) = send(http.get(url(path))).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}\n{}", logs());
        assert_eq!(
            body,
            json!({"path": "/items/7", "version": version}),
            "{path}"
        );
    }
    // A public app's missing version is a 404 to anyone.
    let (status, body) = send(http.get(url("api@3/items/7"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(message(&body).contains("has no version 3"), "{body}");
}
