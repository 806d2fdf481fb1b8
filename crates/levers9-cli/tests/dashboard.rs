//! The dashboard end to end, in a real browser: a controlplane with a runc
//! worker, the dashboard API (development sign-in on), the web app built
//! for that API and served by `next start`, a function run through the
//! SDK, then dashboard/web/tests/browser.mjs drives Debian's chromium over
//! it. The web app's stdout stands for the web pod's log.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::fleet::{python_image, Worker};
use common::{backend_env, free_port, text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::{CreateTokenRequest, ListTasksRequest};
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

async fn workspace_token(cp: &Controlplane, admin: &str, description: &str) -> String {
    cp.tokens()
        .await
        .create_token(with_token(
            CreateTokenRequest {
                token_type: "workspace".into(),
                description: description.into(),
            },
            admin,
        ))
        .await
        .expect("workspace token")
        .into_inner()
        .secret
}

/// Runs one function through the SDK; returns what it printed and its task.
async fn run_a_function(cp: &Controlplane, token: &str, marker: &str) -> String {
    let python = std::env::var("LEVERS9_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("LEVERS9_TEST_PYTHON is not set: run the tests with scripts/test.sh (make test)")
    });
    let app = tempfile::tempdir().expect("app dir");
    std::fs::write(
        app.path().join("dashboard_app.py"),
        "import sys\nfrom levers9 import function\n\n\
         @function\ndef greet(marker):\n    print(marker, flush=True)\n    return 'done'\n\n\
         if __name__ == '__main__':\n    print(greet.remote(sys.argv[1]))\n",
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
    listed
        .into_iter()
        .find(|t| t.function_name == "greet")
        .expect("the greet task is listed")
        .task_id
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

#[tokio::test]
async fn the_dashboard_in_a_browser_shows_a_functions_task_and_log_under_its_security_headers() {
    let cp = controlplane();
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "runc").await;

    // The API, in-process, on the dashboard's token.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let api_base = format!("http://{}/api", listener.local_addr().expect("addr"));
    let web_port = free_port();
    let web_url = format!("http://127.0.0.1:{web_port}");
    let dashboard_token = workspace_token(&cp, &admin, "dashboard").await;
    let settings = [
        ("LEVERS9_TOKEN", dashboard_token),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1".to_owned()),
        ("LEVERS9_CONTROLPLANE_PORT", cp.grpc_port.to_string()),
        ("LEVERS9_DASHBOARD_URL", web_url.clone()),
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

    let marker = format!("dashboard-e2e-{}", std::process::id());
    let user_token = workspace_token(&cp, &admin, "sdk").await;
    let task_id = run_a_function(&cp, &user_token, &marker).await;

    let logs = tempfile::tempdir().expect("log dir");
    let web_log = logs.path().join("web.log");
    let _web = web_app(&api_base, web_port, &web_log);

    let browser = tokio::process::Command::new("node")
        .arg("tests/browser.mjs")
        .current_dir(repo().join("dashboard/web"))
        .env("WEB_URL", &web_url)
        .env("API_BASE", &api_base)
        .env("TASK_ID", &task_id)
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
