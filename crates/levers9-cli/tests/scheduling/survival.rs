//! Function calls that outlive a killed worker, a restarted or killed
//! controlplane, a Redis restart, and a worker's SIGTERM drain.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use levers9_api::v1::{AttemptOutcome, GetTaskRequest, TaskState};

use super::common::fleet::Worker;
use super::common::{backend_env, text, with_token, Backend, Controlplane};
use super::{caller, controlplane, finished, results, run_cli, running_task, servers_env, worker};

#[tokio::test]
async fn a_task_outlives_its_killed_worker() {
    let cp = controlplane("worker:\n  heartbeatTtlSeconds: 2\n", &[]);
    let admin = cp.admin_token().await;
    let (mut a, id_a) = worker(&cp, &admin).await;
    let (mut b, id_b) = worker(&cp, &admin).await;
    let dir = tempfile::tempdir().expect("dir");
    let (child, token) = caller(&cp, &admin, dir.path(), &["once", "6"]).await;
    let task = running_task(&cp, &token, Duration::from_secs(120)).await;
    let (killed, survivor) = if task.worker_id == id_a {
        a.kill();
        (id_a, b.log())
    } else {
        b.kill();
        (id_b, a.log())
    };
    let lines = finished(child, &[cp.log(), survivor]);
    assert_eq!(results(&lines), ["result: attempt 1"], "{lines:?}");

    let shown = cp
        .functions()
        .await
        .get_task(with_token(
            GetTaskRequest {
                task_id: task.task_id.clone(),
            },
            &token,
        ))
        .await
        .expect("get task")
        .into_inner();
    assert_eq!(shown.task.expect("task").state(), TaskState::Complete);
    let attempts = shown.attempts;
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[0].worker_id, killed);
    assert_eq!(
        (attempts[0].attempt, attempts[0].outcome()),
        (1, AttemptOutcome::Lost)
    );
    assert!(
        attempts[0].message.contains("stopped sending heartbeats")
            && attempts[0].message.contains("without using a retry"),
        "{attempts:?}"
    );
    assert_eq!(attempts[1].attempt, 1);
    assert_ne!(attempts[1].worker_id, killed);
    assert_eq!(attempts[1].outcome(), AttemptOutcome::Complete);
    let show = text(&run_cli(&cp, &token, &["task", "show", &task.task_id]).stdout);
    assert!(show.contains("ATTEMPT") && show.contains(&killed), "{show}");
}

/// The controlplane is killed while a task runs and started again on the
/// same ports: the worker reconnects, the task completes, and the caller
/// following it gets exactly one result.
#[tokio::test]
async fn a_task_outlives_a_controlplane_restart() {
    let mut env = backend_env(Backend::Servers);
    env.push((
        "LEVERS9_GRPC_PORT".into(),
        super::common::free_port().to_string(),
    ));
    env.push((
        "LEVERS9_HTTP_PORT".into(),
        super::common::free_port().to_string(),
    ));
    servers_env(&mut env, "{}\n", &[]);
    let first = Controlplane::start_with(env.clone());
    let admin = first.admin_token().await;
    let _worker = Worker::start(&first, &admin, "default", "runc").await;
    let dir = tempfile::tempdir().expect("dir");
    let (child, token) = caller(&first, &admin, dir.path(), &["spawn", "6"]).await;
    running_task(&first, &token, Duration::from_secs(120)).await;
    drop(first);
    let second = Controlplane::start_with(env);
    let lines = finished(child, &[second.log()]);
    assert_eq!(results(&lines).len(), 1, "{lines:?}");
}

/// Two controlplanes on one Postgres and Redis; the one leading the
/// dispatcher is killed mid-task; the other takes over and the task
/// completes with one result for the caller, who talks to the survivor.
#[tokio::test]
async fn two_controlplanes_one_killed_mid_task() {
    let mut env = backend_env(Backend::Servers);
    servers_env(&mut env, "{}\n", &[]);
    let first = Controlplane::start_with(env.clone());
    let admin = first.admin_token().await;
    first
        .wait_for_log(
            "this replica dispatches function inputs",
            Duration::from_secs(30),
        )
        .await;
    let second = Controlplane::start_with(env);
    let _worker = Worker::start(&second, &admin, "default", "runc").await;
    let dir = tempfile::tempdir().expect("dir");
    let (child, token) = caller(&second, &admin, dir.path(), &["spawn", "5"]).await;
    running_task(&second, &token, Duration::from_secs(120)).await;
    drop(first);
    second
        .wait_for_log(
            "this replica dispatches function inputs",
            Duration::from_secs(30),
        )
        .await;
    let lines = finished(child, &[second.log()]);
    assert_eq!(results(&lines).len(), 1, "{lines:?}");
}

/// A Redis of the test's own, persisting to disk, that can be stopped and
/// started again on the same port.
struct OwnRedis {
    child: Option<Child>,
    dir: tempfile::TempDir,
    port: u16,
}

impl OwnRedis {
    fn start() -> OwnRedis {
        let mut redis = OwnRedis {
            child: None,
            dir: tempfile::tempdir().expect("dir"),
            port: super::common::free_port(),
        };
        redis.resume();
        redis
    }

    fn resume(&mut self) {
        let mut child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        while let Some(Ok(line)) = lines.next() {
            if line.contains("Ready to accept connections") {
                break;
            }
        }
        std::thread::spawn(move || for _ in lines {});
        self.child = Some(child);
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
            let _ = child.wait();
        }
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Redis goes away for a few seconds while a task runs and comes back: the
/// system recovers and the caller gets the one result.
#[tokio::test]
async fn redis_stopped_and_restarted_loses_nothing() {
    let mut redis = OwnRedis::start();
    let mut env: Vec<(String, String)> = backend_env(Backend::Servers)
        .into_iter()
        .filter(|(k, _)| k != "LEVERS9_REDIS_ADDRS")
        .collect();
    env.push((
        "LEVERS9_REDIS_ADDRS".into(),
        format!("127.0.0.1:{}", redis.port),
    ));
    servers_env(&mut env, "{}\n", &[]);
    let cp = Controlplane::start_with(env);
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "runc").await;
    let dir = tempfile::tempdir().expect("dir");
    let (child, token) = caller(&cp, &admin, dir.path(), &["spawn", "8"]).await;
    running_task(&cp, &token, Duration::from_secs(120)).await;
    redis.stop();
    tokio::time::sleep(Duration::from_secs(3)).await;
    redis.resume();
    let lines = finished(child, &[cp.log(), worker.log()]);
    assert_eq!(results(&lines).len(), 1, "{lines:?}");
}

/// SIGTERM on the worker running a task: it drains, and past its grace
/// (1 s in these tests) stops the container and hands the input back; the
/// input runs on the other worker under the same attempt, and the caller
/// gets one result.
#[tokio::test]
async fn a_sigterm_drain_hands_the_input_back_without_using_an_attempt() {
    let cp = controlplane("{}\n", &[]);
    let admin = cp.admin_token().await;
    let (a, id_a) = worker(&cp, &admin).await;
    let (b, id_b) = worker(&cp, &admin).await;
    let dir = tempfile::tempdir().expect("dir");
    let (child, token) = caller(&cp, &admin, dir.path(), &["once", "6"]).await;
    let task = running_task(&cp, &token, Duration::from_secs(120)).await;
    let (stopped, kept) = if task.worker_id == id_a {
        let log = a.log();
        a.stop();
        (id_a, (b, log))
    } else {
        let log = b.log();
        b.stop();
        (id_b, (a, log))
    };
    let lines = finished(child, &[cp.log(), kept.1, kept.0.log()]);
    assert_eq!(results(&lines), ["result: attempt 1"], "{lines:?}");
    let attempts = cp
        .functions()
        .await
        .get_task(with_token(
            GetTaskRequest {
                task_id: task.task_id,
            },
            &token,
        ))
        .await
        .expect("get task")
        .into_inner()
        .attempts;
    let seen: Vec<(u32, AttemptOutcome, bool)> = attempts
        .iter()
        .map(|a| (a.attempt, a.outcome(), a.worker_id == stopped))
        .collect();
    assert_eq!(
        seen,
        [
            (1, AttemptOutcome::Requeued, true),
            (1, AttemptOutcome::Complete, false)
        ],
        "{attempts:?}"
    );
}
