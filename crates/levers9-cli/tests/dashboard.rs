//! The dashboard end to end, in a real browser: a controlplane with a runc
//! worker, the dashboard API (development sign-in on), the web app built
//! for that API and served by `next start`, two functions run through the
//! SDK (one fails both its attempts) and a volume made with the CLI, then
//! dashboard/web/tests/browser.mjs drives Debian's chromium over it. The
//! web app's stdout stands for the web pod's log.
//!
//! Also, without a browser: the API's stub, volume and task routes need a
//! session and answer 404 for another workspace's ids.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::fleet::{python_image, Worker};
use common::stubs::{other_workspace, stub, workspace_token};
use common::{backend_env, free_port, text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::{DeployRequest, DeployedFunction, ListTasksRequest, SpawnTaskRequest, Task};
use levers9_dashboard_api::config::Config;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A child process killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn controlplane() -> Controlplane {
    let image = python_image();
    let (registry, name) = image.split_once('/').expect("image has a registry");
    let mut env = backend_env(Backend::Embedded);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    env.push(("LEVERS9_BASE_IMAGE_REGISTRY".into(), registry.into()));
    env.push(("LEVERS9_BASE_IMAGE".into(), name.into()));
    Controlplane::start_with(env)
}

/// Runs two functions through the SDK: `greet`, which prints `marker`,
/// and `fails`, which raises on both of its attempts; their tasks.
async fn run_functions(cp: &Controlplane, token: &str, marker: &str) -> (Task, Task) {
    let python = std::env::var("LEVERS9_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("LEVERS9_TEST_PYTHON is not set: run the tests with scripts/test.sh (make test)")
    });
    let app = tempfile::tempdir().expect("app dir");
    std::fs::write(
        app.path().join("dashboard_app.py"),
        "import sys\nfrom levers9 import function\n\n\
         @function\ndef greet(marker):\n    print(marker, flush=True)\n    return 'done'\n\n\
         @function(retries=1)\ndef fails():\n    raise RuntimeError('dashboard-attempt-failed')\n\n\
         if __name__ == '__main__':\n    print(greet.remote(sys.argv[1]))\n\
         \x20   try:\n        fails.remote()\n    except Exception as e:\n        print('fails:', e)\n",
    )
    .expect("write the app");
    let home = tempfile::tempdir().expect("home");
    let out = Command::new(python)
        .args(["dashboard_app.py", marker])
        .current_dir(app.path())
        .env("HOME", home.path())
        .env("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1")
        .env("LEVERS9_CONTROLPLANE_PORT", cp.grpc_port.to_string())
        .env("LEVERS9_TOKEN", token)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "the function failed:\n{}\n{}\n--- controlplane ---\n{}",
        text(&out.stdout),
        text(&out.stderr),
        cp.log()
    );
    assert!(text(&out.stdout).contains("done"), "{}", text(&out.stdout));
    let tasks = cp.channel().await;
    let mut functions = levers9_api::v1::function_service_client::FunctionServiceClient::new(tasks);
    let listed = functions
        .list_tasks(with_token(ListTasksRequest { limit: 10 }, token))
        .await
        .expect("list tasks")
        .into_inner()
        .tasks;
    let task = |name: &str| {
        listed
            .iter()
            .find(|t| t.function_name == name)
            .unwrap_or_else(|| panic!("the {name} task is listed: {listed:?}"))
            .clone()
    };
    (task("greet"), task("fails"))
}

/// Builds the web app for `api_base` and serves it on `port`; its log file.
fn web_app(api_base: &str, port: u16, log: &Path) -> Process {
    let built = Command::new(repo().join("scripts/dashboard-web.sh"))
        .env("NEXT_PUBLIC_API_BASE", api_base)
        .output()
        .expect("run scripts/dashboard-web.sh");
    assert!(
        built.status.success(),
        "the web app did not build:\n{}\n{}",
        text(&built.stdout),
        text(&built.stderr)
    );
    let out = File::create(log).expect("web log");
    let child = Command::new("node")
        .args([
            "node_modules/next/dist/bin/next",
            "start",
            "-H",
            "127.0.0.1",
            "-p",
        ])
        .arg(port.to_string())
        .current_dir(repo().join("dashboard/web"))
        .env("NEXT_TELEMETRY_DISABLED", "1")
        .stdout(out.try_clone().expect("log"))
        .stderr(out)
        .spawn()
        .expect("next start");
    let web = Process(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the web app did not listen:\n{}",
            read(log)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    web
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The API, in-process, on `token`, with the development sign-in on, for
/// pages served from `web_url`; its base URL.
async fn start_api(cp: &Controlplane, token: String, web_url: &str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let api_base = format!("http://{}/api", listener.local_addr().expect("addr"));
    let settings = [
        ("LEVERS9_TOKEN", token),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1".to_owned()),
        ("LEVERS9_CONTROLPLANE_PORT", cp.grpc_port.to_string()),
        ("LEVERS9_DASHBOARD_URL", web_url.to_owned()),
        ("LEVERS9_DASHBOARD_API_URL", api_base.clone()),
        (
            "LEVERS9_DASHBOARD_SESSION_SECRET",
            "a-session-secret-for-the-browser-test".to_owned(),
        ),
        ("LEVERS9_DASHBOARD_DEV_SIGNIN", "true".to_owned()),
    ];
    let config = Config::from_lookup(|name| {
        settings
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    })
    .expect("dashboard config");
    tokio::spawn(levers9_dashboard_api::serve(config, listener));
    api_base
}

/// `levers9 ARGS` with `token`, which must succeed.
fn cli_ok(cp: &Controlplane, token: &str, args: &[&str]) {
    let out = cp.cli_as(token, args, None);
    assert!(
        out.status.success(),
        "levers9 {args:?}: {}",
        text(&out.stderr)
    );
}

/// A volume holding `path` with `content`, made with the CLI.
fn volume_with_file(cp: &Controlplane, token: &str, volume: &str, path: &str, content: &str) {
    cli_ok(cp, token, &["volume", "create", volume]);
    let dir = tempfile::tempdir().expect("dir");
    let local = dir.path().join("file");
    std::fs::write(&local, content).expect("write");
    let local = local.to_str().expect("utf-8 path");
    cli_ok(
        cp,
        token,
        &["volume", "cp", local, &format!("{volume}:{path}")],
    );
}

#[tokio::test]
async fn the_dashboard_in_a_browser_shows_a_functions_task_and_log_under_its_security_headers() {
    let cp = controlplane();
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "runc").await;

    let web_port = free_port();
    let web_url = format!("http://127.0.0.1:{web_port}");
    let dashboard_token = workspace_token(&cp, &admin, "dashboard").await;
    let api_base = start_api(&cp, dashboard_token, &web_url).await;

    let marker = format!("dashboard-e2e-{}", std::process::id());
    let user_token = workspace_token(&cp, &admin, "sdk").await;
    let (greet, fails) = run_functions(&cp, &user_token, &marker).await;
    deploy(&cp, &user_token, "dashboard-app", "greet", &greet.stub_id).await;
    let volume_text = format!("volume-file-{}", std::process::id());
    volume_with_file(
        &cp,
        &user_token,
        "dash-vol",
        "notes/hello.txt",
        &volume_text,
    );

    let logs = tempfile::tempdir().expect("log dir");
    let web_log = logs.path().join("web.log");
    let _web = web_app(&api_base, web_port, &web_log);

    let browser = tokio::process::Command::new("node")
        .arg("tests/browser.mjs")
        .current_dir(repo().join("dashboard/web"))
        .env("WEB_URL", &web_url)
        .env("API_BASE", &api_base)
        .env("TASK_ID", &greet.task_id)
        .env("STUB_ID", &greet.stub_id)
        .env("FAIL_TASK_ID", &fails.task_id)
        .env("VOLUME", "dash-vol")
        .env("VOLUME_TEXT", &volume_text)
        .env("MARKER", &marker)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run the browser script");
    assert!(
        browser.status.success(),
        "the browser checks failed:\n{}\n{}\n--- web ---\n{}\n--- controlplane ---\n{}\n--- worker ---\n{}",
        text(&browser.stdout),
        text(&browser.stderr),
        read(&web_log),
        cp.log(),
        worker.log()
    );
    println!("{}", text(&browser.stdout));

    // The image the full policy forbids was reported: one csp-report line.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let log = read(&web_log);
        let reports: Vec<&str> = log
            .lines()
            .filter(|l| l.starts_with("csp-report "))
            .collect();
        if reports
            .iter()
            .any(|l| l.contains("img-src") && l.contains("pixel.svg"))
        {
            assert!(
                reports
                    .iter()
                    .all(|l| l.contains("\"disposition\":\"report\"")),
                "every report is report-only: {reports:?}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no csp-report line for the forbidden image:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // The flood the browser script posted was cut short, and the oversized
    // report never reached the log.
    let log = read(&web_log);
    let flood = log
        .lines()
        .filter(|l| l.starts_with("csp-report ") && l.contains("flood-"))
        .count();
    assert!(flood < 70, "{flood} of 70 flooded reports were logged");
    assert!(
        !log.contains(&"x".repeat(1000)),
        "the oversized report was logged"
    );
}

/// A task of `stub`, pending for want of a worker; its id.
async fn spawn(cp: &Controlplane, token: &str, stub_id: &str) -> String {
    cp.functions()
        .await
        .spawn_task(with_token(
            SpawnTaskRequest {
                stub_id: stub_id.into(),
                payload: b"unused".to_vec(),
            },
            token,
        ))
        .await
        .expect("spawn")
        .into_inner()
        .task_id
}

/// Deploys `stub` as the one function of `app`.
async fn deploy(cp: &Controlplane, token: &str, app: &str, function: &str, stub_id: &str) {
    cp.functions()
        .await
        .deploy(with_token(
            DeployRequest {
                app_name: app.into(),
                functions: vec![DeployedFunction {
                    function_name: function.into(),
                    stub_id: stub_id.into(),
                    schedule: None,
                    endpoint: None,
                }],
            },
            token,
        ))
        .await
        .expect("deploy");
}

/// A session of the development sign-in: the cookie header to send.
async fn dev_session(http: &reqwest::Client, api: &str, web_url: &str) -> String {
    let signed_in = http
        .post(format!("{api}/auth/dev"))
        .header("origin", web_url)
        .json(&serde_json::json!({ "email": "ada@example.com" }))
        .send()
        .await
        .expect("dev sign-in");
    assert!(signed_in.status().is_success(), "{}", signed_in.status());
    signed_in
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.starts_with("levers9_session="))
        .and_then(|c| c.split(';').next())
        .expect("a session cookie")
        .to_owned()
}

#[tokio::test]
async fn the_apis_stub_volume_and_task_views_need_a_session_and_refuse_another_workspaces_ids() {
    let mut env = backend_env(Backend::Embedded);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    let cp = Controlplane::start_with(env);
    let admin = cp.admin_token().await;
    let other = other_workspace(&cp, &admin, "other").await;
    let user = workspace_token(&cp, &admin, "user").await;

    let ours = stub(&cp, &user, "app/handlers.py", "resize").await;
    let our_task = spawn(&cp, &user, &ours).await;
    volume_with_file(&cp, &user, "ours", "a/b.txt", "our bytes");
    let theirs = stub(&cp, &other, "theirs.py", "plan").await;
    let their_task = spawn(&cp, &other, &theirs).await;
    deploy(&cp, &user, "handlers", "resize", &ours).await;
    deploy(&cp, &other, "theirs", "plan", &theirs).await;
    volume_with_file(&cp, &other, "theirs", "x.txt", "their bytes");

    let web_url = format!("http://127.0.0.1:{}", free_port());
    let api = start_api(
        &cp,
        workspace_token(&cp, &admin, "dashboard").await,
        &web_url,
    )
    .await;
    let http = reqwest::Client::new();
    let get = |path: String, cookie: Option<&str>| {
        let mut request = http.get(format!("{api}{path}"));
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        request.send()
    };

    let ours_routes = [
        "/deployments".to_owned(),
        "/stubs".to_owned(),
        format!("/stubs/{ours}"),
        format!("/tasks/{our_task}"),
        "/volumes".to_owned(),
        "/volumes/ours/files".to_owned(),
        "/volumes/ours/file?path=a/b.txt".to_owned(),
    ];
    for path in &ours_routes {
        let status = get(path.clone(), None).await.expect("get").status();
        assert_eq!(
            status,
            reqwest::StatusCode::UNAUTHORIZED,
            "{path} without a session"
        );
        let forged = get(path.clone(), Some("levers9_session=forged.value"))
            .await
            .expect("get")
            .status();
        assert_eq!(
            forged,
            reqwest::StatusCode::UNAUTHORIZED,
            "{path} with a forged session"
        );
    }

    let cookie = dev_session(&http, &api, &web_url).await;
    let json = |path: String| {
        let response = get(path.clone(), Some(&cookie));
        async move {
            let response = response.await.expect("get");
            assert_eq!(response.status(), reqwest::StatusCode::OK, "{path}");
            response.json::<serde_json::Value>().await.expect("json")
        }
    };
    let stubs = json("/stubs".into()).await;
    let ids: Vec<&str> = stubs
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|s| s["stubId"].as_str())
        .collect();
    assert_eq!(ids, [ours.as_str()], "{stubs}");
    let deployments = json("/deployments".into()).await;
    assert_eq!(
        deployments,
        serde_json::json!([{
            "appName": "handlers",
            "functionName": "resize",
            "stubId": ours,
            "version": 1,
            "deployedBy": deployments[0]["deployedBy"],
            "createdAt": deployments[0]["createdAt"],
        }]),
        "{deployments}"
    );
    let detail = json(format!("/stubs/{ours}")).await;
    assert_eq!(detail["stub"]["modulePath"], "app/handlers.py", "{detail}");
    assert_eq!(detail["stub"]["config"]["cpuMillicores"], 250, "{detail}");
    assert_eq!(
        detail["recentTasks"][0]["taskId"],
        our_task.as_str(),
        "{detail}"
    );
    let task = json(format!("/tasks/{our_task}")).await;
    assert_eq!(task["task"]["stubId"], ours.as_str(), "{task}");
    assert!(task["attempts"].is_array(), "{task}");
    assert_eq!(json("/volumes".into()).await, serde_json::json!(["ours"]));
    let entries = json("/volumes/ours/files?path=a".into()).await;
    assert_eq!(entries[0]["path"], "a/b.txt", "{entries}");
    assert_eq!(entries[0]["size"], 9, "{entries}");

    let file = get("/volumes/ours/file?path=a/b.txt".into(), Some(&cookie))
        .await
        .expect("download");
    assert_eq!(file.status(), reqwest::StatusCode::OK);
    let header = |name: &str| {
        file.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(
        header("content-disposition"),
        "attachment; filename=\"b.txt\""
    );
    assert_eq!(header("content-type"), "application/octet-stream");
    assert_eq!(header("x-content-type-options"), "nosniff");
    assert_eq!(header("content-security-policy"), "sandbox");
    assert_eq!(file.text().await.expect("body"), "our bytes");

    // Another workspace's stub, task, volume and file are not found.
    for path in [
        format!("/stubs/{theirs}"),
        format!("/tasks/{their_task}"),
        "/volumes/theirs/files".to_owned(),
        "/volumes/theirs/file?path=x.txt".to_owned(),
    ] {
        let response = get(path.clone(), Some(&cookie)).await.expect("get");
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        assert_eq!(status, reqwest::StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(!body.contains("their bytes"), "{path}: {body}");
    }
    // A path that would leave the volume is refused.
    let escape = get("/volumes/ours/file?path=../../x.txt".into(), Some(&cookie))
        .await
        .expect("get")
        .status();
    assert_eq!(escape, reqwest::StatusCode::BAD_REQUEST);
}
