//! `levers9 logs` end to end, with a real controlplane and a runc worker:
//! functions of a deployed app print to stdout and stderr in spawned tasks
//! (no caller waits for them); afterwards `levers9 logs TASK` prints one
//! task's output as written, `levers9 logs APP/FUNCTION` and `levers9 logs
//! APP` the lines of several tasks, prefixed; `-f` sees a line printed
//! while it follows and ends with the task (on Postgres and Redis, through
//! a second replica); another workspace's token gets a clear not-found. On
//! Postgres and Redis, and on the embedded backend.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::fleet::{python_image, Worker};
use common::stubs::{other_workspace, workspace_token};
use common::{backend_env, text, with_token, Backend, Controlplane, BIN, SECRET};
use levers9_api::v1::log_service_client::LogServiceClient;
use levers9_api::v1::{ListLogsRequest, ListTasksRequest, TaskState};

/// `talk` prints on both streams; `slow` prints, waits for an item on the
/// queue `go`, then prints again.
const APP: &str = "import sys\nfrom levers9 import Queue, function\n\n\
    @function\n\
    def talk(n):\n    print(f'out {n}', flush=True)\n    \
    print(f'err {n}', file=sys.stderr, flush=True)\n    return n\n\n\
    @function\n\
    def slow():\n    print('first', flush=True)\n    \
    Queue.from_name('go', create_if_missing=True).get(timeout=120)\n    print('second', flush=True)\n";

/// Spawns two `talk` calls and one `slow`, prints their task ids and exits
/// without waiting for them.
const SPAWN: &str = "from levers9 import Function\n\
    talk = Function.lookup('chatty', 'talk')\n\
    calls = [talk.spawn(0), talk.spawn(1), Function.lookup('chatty', 'slow').spawn()]\n\
    print(' '.join(c.task_id for c in calls))\n";

fn python() -> String {
    std::env::var("LEVERS9_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("LEVERS9_TEST_PYTHON is not set: run the tests with scripts/test.sh (make test)")
    })
}

fn sdk() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk/python")
}

/// Runs `script` with the SDK of this tree as `token`; its stdout.
fn run_python(cp: &Controlplane, token: &str, script: &str) -> String {
    let home = tempfile::tempdir().expect("home");
    let out = Command::new(python())
        .args(["-c", script])
        .current_dir(home.path())
        .env("HOME", home.path())
        .env("PYTHONPATH", sdk())
        .env("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1")
        .env("LEVERS9_CONTROLPLANE_PORT", cp.grpc_port.to_string())
        .env("LEVERS9_TOKEN", token)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed:\n{}\n{}\n--- controlplane ---\n{}",
        text(&out.stdout),
        text(&out.stderr),
        cp.log()
    );
    text(&out.stdout)
}

/// `levers9 deploy FILE` as `token`.
fn deploy(cp: &Controlplane, token: &str, file: &Path) {
    let home = tempfile::tempdir().expect("home");
    let port = cp.grpc_port.to_string();
    let python = python();
    let env = [
        ("LEVERS9_TOKEN", token),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
        ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
        ("LEVERS9_PYTHON", python.as_str()),
        ("PYTHONPATH", sdk()),
    ];
    let out = cp.cli(
        home.path(),
        &["deploy", file.to_str().expect("utf-8")],
        &env,
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Waits until the tasks `ids` are complete.
async fn wait_complete(cp: &Controlplane, token: &str, ids: &[&str], logs: &dyn Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let tasks = cp
            .functions()
            .await
            .list_tasks(with_token(ListTasksRequest { limit: 100 }, token))
            .await
            .expect("list tasks")
            .into_inner()
            .tasks;
        let done = |id: &str| {
            tasks
                .iter()
                .any(|t| t.task_id == id && t.state() == TaskState::Complete)
        };
        if ids.iter().all(|id| done(id)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "tasks {ids:?} did not complete: {tasks:#?}\n{}",
            logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `levers9 logs ARGS` as `token`: (stdout, stderr), asserting success,
/// once `ready` holds of them: the writer stores output a moment after the
/// worker sends it, so a task can be complete before its last lines are.
async fn logs_when(
    cp: &Controlplane,
    token: &str,
    args: &[&str],
    ready: impl Fn(&str, &str) -> bool,
) -> (String, String) {
    let all: Vec<&str> = std::iter::once("logs")
        .chain(args.iter().copied())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = cp.cli_as(token, &all, None);
        assert!(
            out.status.success(),
            "levers9 {all:?} failed: {}\n--- controlplane ---\n{}",
            text(&out.stderr),
            cp.log()
        );
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        if ready(&stdout, &stderr) {
            return (stdout, stderr);
        }
        assert!(
            Instant::now() < deadline,
            "levers9 {all:?} never showed what was expected:\n{stdout}\n{stderr}\n{}",
            cp.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The environment of a controlplane on `backend` with the test Python
/// image as base image; replicas started with the same one share it.
fn controlplane_env(backend: Backend) -> Vec<(String, String)> {
    let mut env = backend_env(backend);
    let image = python_image();
    let (registry, name) = image.split_once('/').expect("image has a registry");
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    env.push(("LEVERS9_BASE_IMAGE_REGISTRY".into(), registry.into()));
    env.push(("LEVERS9_BASE_IMAGE".into(), name.into()));
    env
}

async fn output_is_kept_after_the_caller_is_gone_and_followed_live(backend: Backend) {
    let env = controlplane_env(backend);
    let cp = Controlplane::start_with(env.clone());
    // On Postgres and Redis, -f asks a second replica, which does not hold
    // the worker's stream: its lines reach it through the record store and
    // the hot state's channel.
    let second = (backend == Backend::Servers).then(|| Controlplane::start_with(env));
    let follow_at = second.as_ref().unwrap_or(&cp);
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "runc").await;
    let user = workspace_token(&cp, &admin, "user").await;
    let logs = || format!("{}\n--------\n{}", cp.log(), worker.log());
    let code = tempfile::tempdir().expect("code");
    let file = code.path().join("chatty.py");
    std::fs::write(&file, APP).expect("write app");
    deploy(&cp, &user, &file);

    let spawned = run_python(&cp, &user, SPAWN);
    let ids: Vec<&str> = spawned.split_whitespace().collect();
    let [t0, t1, slow] = ids[..] else {
        panic!("three task ids: {spawned}")
    };

    // -f on the slow task, started before it prints its second line.
    let home = tempfile::tempdir().expect("home");
    let mut follower = Command::new(BIN)
        .args(["logs", slow, "-f"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("LEVERS9_TOKEN", &user)
        .env("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1")
        .env("LEVERS9_CONTROLPLANE_PORT", follow_at.grpc_port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start levers9 logs -f");
    let stdout = follower.stdout.take().expect("stdout");
    let (lines_tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut follower_err = follower.stderr.take().expect("stderr");
    let mut wait_line = |want: &str| {
        let line = lines
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|e| {
                let mut err = String::new();
                let _ = std::io::Read::read_to_string(&mut follower_err, &mut err);
                panic!("no {want:?} from levers9 logs -f ({e}): {err}\n{}", logs())
            });
        assert_eq!(line, want);
    };
    wait_line("first");
    // The task is blocked until this put: its next line comes while following.
    run_python(
        &cp,
        &user,
        "from levers9 import Queue\nQueue.from_name('go', create_if_missing=True).put(1)\n",
    );
    wait_line("second");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = follower.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "levers9 logs -f did not end with its task\n{}",
            logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "levers9 logs -f: {status}");

    wait_complete(&cp, &user, &[t0, t1], &logs).await;

    // One task: as written, stderr on stderr.
    let (out, err) = logs_when(&cp, &user, &[t0], |_, err| !err.is_empty()).await;
    assert_eq!(out, "out 0\n");
    assert_eq!(err, "err 0\n");

    // A function: several tasks, each line prefixed.
    let expected = |task: &str, n: u32| {
        (
            format!("{task} stdout| out {n}\n"),
            format!("{task} stderr| err {n}\n"),
        )
    };
    let (out, err) = logs_when(&cp, &user, &["chatty/talk"], |out, err| {
        [(t0, 0), (t1, 1)].iter().all(|(task, n)| {
            let (o, e) = expected(task, *n);
            out.contains(&o) && err.contains(&e)
        })
    })
    .await;
    let talks = |line: &str| line.starts_with(t0) || line.starts_with(t1);
    assert!(
        out.lines().chain(err.lines()).all(talks),
        "only talk's tasks: {out}{err}"
    );
    // print() writes its text and its newline apart: still one line each.
    assert_eq!(out.lines().count() + err.lines().count(), 4, "{out}{err}");

    // The app: every function; --tail keeps the last lines.
    let (out, _) = logs_when(&cp, &user, &["chatty"], |out, _| {
        out.contains(&format!("{slow} stdout| second"))
            && out.contains(&format!("{t1} stdout| out 1"))
    })
    .await;
    assert!(out.contains(&format!("{t0} stdout| out 0")), "{out}");
    let (out, err) = logs_when(
        &cp,
        &user,
        &["chatty", "--tail", "1", "--since", "1h"],
        |_, _| true,
    )
    .await;
    assert_eq!(out.lines().count() + err.lines().count(), 1, "{out}{err}");

    // Another workspace: the same answer as an unknown task.
    let other = other_workspace(&cp, &admin, "other").await;
    for id in [t0, "t-0193a5c27d1e7b3a9f003c4d5e6f7a8b"] {
        let out = cp.cli_as(&other, &["logs", id], None);
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!(
                "no task or deployed app \"{id}\" in this workspace"
            )),
            "{err}"
        );
        assert!(!text(&out.stdout).contains("out 0"));
    }
    bad_requests_are_refused(&cp, &user, t0).await;
    let out = cp.cli_as(&other, &["logs", "chatty/talk"], None);
    assert!(
        text(&out.stderr).contains("no deployed function \"talk\" of app \"chatty\""),
        "{}",
        text(&out.stderr)
    );
    let out = cp.cli_as(&other, &["logs", "chatty"], None);
    assert!(
        text(&out.stderr).contains("no task or deployed app \"chatty\""),
        "{}",
        text(&out.stderr)
    );
}

/// The API refuses a request that names no target or two, a bad time or
/// an oversized page, with INVALID_ARGUMENT and what to do.
async fn bad_requests_are_refused(cp: &Controlplane, token: &str, task_id: &str) {
    let mut api = LogServiceClient::new(cp.channel().await);
    let cases = [
        (ListLogsRequest::default(), "name exactly one of task_id"),
        (
            ListLogsRequest {
                task_id: task_id.into(),
                app_name: "chatty".into(),
                ..Default::default()
            },
            "name exactly one of task_id",
        ),
        (
            ListLogsRequest {
                task_id: task_id.into(),
                since: "yesterday".into(),
                ..Default::default()
            },
            "not an RFC 3339 time",
        ),
        (
            ListLogsRequest {
                task_id: task_id.into(),
                limit: 10_001,
                ..Default::default()
            },
            "read further with after_id",
        ),
        (
            ListLogsRequest {
                stub_id: String::new(),
                function_name: "talk".into(),
                task_id: task_id.into(),
                ..Default::default()
            },
            "function_name needs app_name",
        ),
    ];
    for (request, says) in cases {
        let status = api
            .list_logs(with_token(request.clone(), token))
            .await
            .expect_err("refused");
        assert_eq!(
            status.code(),
            tonic::Code::InvalidArgument,
            "{request:?}: {status:?}"
        );
        assert!(status.message().contains(says), "{request:?}: {status:?}");
    }
}

#[tokio::test]
async fn output_is_kept_after_the_caller_is_gone_on_postgres_and_redis() {
    output_is_kept_after_the_caller_is_gone_and_followed_live(Backend::Servers).await;
}

#[tokio::test]
async fn output_is_kept_after_the_caller_is_gone_on_the_embedded_backend() {
    output_is_kept_after_the_caller_is_gone_and_followed_live(Backend::Embedded).await;
}
