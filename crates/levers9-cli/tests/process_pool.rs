//! A `provider: process` pool end to end, with real processes on Postgres,
//! Redis and runc: a request makes the controlplane start a worker process,
//! and once the pool is idle the process is stopped and reaped (scale to
//! zero), its token revoked.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::fleet::busybox_image;
use common::{backend_env, text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::{ListTokensRequest, ListWorkersRequest, WorkerStatus};

const CONFIG: &str = "worker:
  pools:
    default:
      provider: process
      resources: {cpuMillicores: 2000, memoryMib: 2048}
      scaling: {minWorkers: 0, maxWorkers: 1}
      process: {drainGraceSeconds: 1}
";

/// The ids of the pool's workers the controlplane lists as ready.
async fn ready_workers(cp: &Controlplane, admin: &str) -> Vec<String> {
    cp.workers()
        .await
        .list_workers(with_token(ListWorkersRequest {}, admin))
        .await
        .expect("list workers")
        .into_inner()
        .workers
        .into_iter()
        .filter(|w| w.pool == "default" && w.status() == WorkerStatus::Ready)
        .map(|w| w.worker_id)
        .collect()
}

/// The process whose arguments hold `needle`, and its arguments.
fn process_with_arg(needle: &str) -> Option<(u32, String)> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if args.split(' ').any(|a| a == needle) {
            return Some((pid, args));
        }
    }
    None
}

fn exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn a_request_starts_a_worker_process_and_an_idle_pool_stops_it() {
    let mut env = backend_env(Backend::Servers);
    let config = common::config_file(CONFIG);
    env.push(("LEVERS9_CONFIG".into(), config.display().to_string()));
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    let mut cp = Controlplane::start_with(env);
    let admin = cp.admin_token().await;
    assert!(ready_workers(&cp, &admin).await.is_empty());

    // The pool has no worker: the request waits, and its demand makes
    // the controlplane start one.
    let image = busybox_image();
    let out = cp.cli_as(
        &admin,
        &[
            "container",
            "run",
            &image,
            "--",
            "sh",
            "-c",
            "echo from a process worker",
        ],
        None,
    );
    assert_eq!(
        text(&out.stdout),
        "from a process worker\n",
        "{}\n{}",
        text(&out.stderr),
        cp.log()
    );
    let workers = ready_workers(&cp, &admin).await;
    assert_eq!(workers.len(), 1, "{workers:?}");
    let worker_id = &workers[0];
    let (pid, args) = process_with_arg(worker_id).expect("the worker's process");
    assert!(args.contains("worker --pool default"), "{args}");
    assert!(!args.contains("l9_"), "a token in the arguments: {args}");

    // Its own state directory, with its config readable by root only.
    let state_dir = cp.dir.path().join("data/workers/default/0");
    assert!(args.contains(&state_dir.display().to_string()), "{args}");
    let mode = std::fs::metadata(state_dir.join("worker-config.yaml"))
        .expect("the worker's config file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // Idle: wanted falls to minWorkers (0); the worker drains, exits and
    // is reaped (a few 10 s rounds).
    let deadline = Instant::now() + Duration::from_secs(90);
    while exists(pid) {
        assert!(
            Instant::now() < deadline,
            "the idle worker process {pid} is still there:\n{}",
            cp.log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The process is gone; its stream's end reaches the fleet a moment later.
    while !ready_workers(&cp, &admin).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the exited worker {worker_id} is still listed as ready:\n{}",
            cp.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Its token is revoked as the worker is reaped.
    loop {
        let tokens = cp
            .tokens()
            .await
            .list_tokens(with_token(ListTokensRequest {}, &admin))
            .await
            .expect("list tokens")
            .into_inner()
            .tokens;
        let worker_token = tokens
            .into_iter()
            .find(|t| t.description.contains(worker_id.as_str()))
            .expect("the worker's token");
        assert_eq!(worker_token.token_type, "worker");
        if !worker_token.revoked_at.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the gone worker's token still works:\n{}",
            cp.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    cp.terminate();
}
