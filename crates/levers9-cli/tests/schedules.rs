//! Schedules end to end, with real controlplanes and a runc worker: a
//! function deployed with `schedule=Period(seconds=2)` runs on its own as
//! tasks; `levers9 schedule list` shows it; a redeploy without it removes
//! it; bad schedules are refused by the SDK and by the controlplane; and
//! with two replicas on Postgres and Redis, killing (SIGKILL) the one that
//! fires schedules neither doubles nor stops the ticks.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use common::fleet::{python_image, Worker};
use common::stubs::{stub, workspace_token};
use common::{backend_env, text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::{
    schedule, DeployRequest, DeployedFunction, ListSchedulesRequest, ListTasksRequest, Schedule,
    Task, TaskState,
};

const FIRES: &str = "this replica fires schedules";

/// The app: `beat` every 2 s, `nightly` at 03:00 UTC, `plain` unscheduled.
const APP: &str = "from levers9 import Cron, Period, function\n\n\
    @function(schedule=Period(seconds=2))\n\
    def beat():\n    return 'beat'\n\n\
    @function(schedule=Cron('0 3 * * *'))\n\
    def nightly():\n    return 'nightly'\n\n\
    @function\n\
    def plain(x):\n    return x\n";

/// The same app with no schedule left.
const UNSCHEDULED: &str = "from levers9 import function\n\n\
    @function\n\
    def beat():\n    return 'beat'\n";

/// A controlplane environment on `backend` with the test Python image as
/// the functions' base image.
fn env(backend: Backend) -> Vec<(String, String)> {
    let mut env = backend_env(backend);
    let image = python_image();
    let (registry, name) = image.split_once('/').expect("image has a registry");
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    env.push(("LEVERS9_BASE_IMAGE_REGISTRY".into(), registry.into()));
    env.push(("LEVERS9_BASE_IMAGE".into(), name.into()));
    env
}

/// Runs `levers9 deploy FILE` as `token`, with the SDK from this tree.
fn deploy(cp: &Controlplane, token: &str, file: &Path) -> std::process::Output {
    let python = std::env::var("LEVERS9_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("LEVERS9_TEST_PYTHON is not set: run the tests with scripts/test.sh (make test)")
    });
    let home = tempfile::tempdir().expect("home");
    let port = cp.grpc_port.to_string();
    let sdk = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk/python");
    let env = [
        ("LEVERS9_TOKEN", token),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
        ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
        ("LEVERS9_PYTHON", python.as_str()),
        ("PYTHONPATH", sdk),
    ];
    let file = file.to_str().expect("utf-8 path");
    cp.cli(home.path(), &["deploy", file], &env, None)
}

async fn tasks(cp: &Controlplane, token: &str) -> Vec<Task> {
    cp.functions()
        .await
        .list_tasks(with_token(ListTasksRequest { limit: 1000 }, token))
        .await
        .map(|r| r.into_inner().tasks)
        .unwrap_or_default()
}

/// The tick of a scheduled run, from its task id `t-<schedule>-<tick>`.
fn tick_of(task: &Task) -> i64 {
    let tick = task.task_id.rsplit('-').next().expect("a tick");
    tick.parse()
        .unwrap_or_else(|_| panic!("{} is not a scheduled run's id", task.task_id))
}

/// Waits until `count` runs of `beat` with a tick after `after` are
/// complete; returns every task of the workspace.
async fn complete_runs(
    cp: &Controlplane,
    token: &str,
    after: i64,
    count: usize,
    logs: &dyn Fn() -> String,
) -> Vec<Task> {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let all = tasks(cp, token).await;
        let done = all
            .iter()
            .filter(|t| {
                t.function_name == "beat" && t.state() == TaskState::Complete && tick_of(t) > after
            })
            .count();
        if done >= count {
            return all;
        }
        let failed: Vec<&Task> = all
            .iter()
            .filter(|t| {
                matches!(
                    t.state(),
                    TaskState::Error | TaskState::Timeout | TaskState::Cancelled
                )
            })
            .collect();
        assert!(failed.is_empty(), "runs failed: {failed:#?}\n{}", logs());
        assert!(
            Instant::now() < deadline,
            "{count} runs after tick {after} did not complete: {all:#?}\n{}",
            logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Each tick has one run, ticks are on the period, and ids follow ticks.
fn assert_one_run_per_tick(all: &[Task]) -> Vec<i64> {
    let runs: Vec<&Task> = all.iter().filter(|t| t.function_name == "beat").collect();
    let ticks: Vec<i64> = runs.iter().map(|t| tick_of(t)).collect();
    let unique: BTreeSet<i64> = ticks.iter().copied().collect();
    assert_eq!(unique.len(), ticks.len(), "a tick ran twice: {runs:#?}");
    assert!(
        ticks.iter().all(|t| t % 2 == 0),
        "ticks off the period: {ticks:?}"
    );
    let ids: BTreeSet<&str> = runs.iter().map(|t| t.task_id.as_str()).collect();
    assert_eq!(ids.len(), runs.len());
    unique.into_iter().collect()
}

/// The rows of `levers9 schedule list`, split on whitespace.
fn schedule_rows(cp: &Controlplane, token: &str) -> Vec<Vec<String>> {
    let out = cp.cli_as(token, &["schedule", "list"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("APP"), "{stdout}");
    stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

#[tokio::test]
async fn a_deployed_schedule_runs_as_tasks_is_listed_and_goes_with_a_redeploy() {
    let cp = Controlplane::start_with(env(Backend::Embedded));
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "runc").await;
    let user = workspace_token(&cp, &admin, "user").await;
    let code = tempfile::tempdir().expect("code");
    let file = code.path().join("pulse.py");
    std::fs::write(&file, APP).expect("write app");

    let out = deploy(&cp, &user, &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Period(seconds=2)"), "{stdout}");
    let logs = || format!("{}\n--------\n{}", cp.log(), worker.log());
    let all = complete_runs(&cp, &user, 0, 2, &logs).await;
    let ticks = assert_one_run_per_tick(&all);

    // The runs are tasks like any other.
    let out = cp.cli_as(&user, &["task", "list"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    for tick in &ticks {
        assert!(listed.contains(&format!("-{tick}")), "{listed}");
    }
    let rows = schedule_rows(&cp, &user);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0][..4], ["pulse", "beat", "every", "2s"], "{rows:?}");
    assert_eq!(
        rows[1][..8],
        ["pulse", "nightly", "cron", "0", "3", "*", "*", "*"],
        "{rows:?}"
    );
    assert_eq!(rows[1][8], "-", "nightly has not run: {rows:?}");
    assert!(rows[1][10].ends_with("T03:00:00Z"), "{rows:?}");

    // A redeploy without the schedules removes them.
    std::fs::write(&file, UNSCHEDULED).expect("rewrite app");
    let out = deploy(&cp, &user, &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(schedule_rows(&cp, &user), Vec::<Vec<String>>::new());
}

#[tokio::test]
async fn a_schedule_that_does_not_parse_is_refused_by_the_sdk_and_the_controlplane() {
    let cp = Controlplane::start_with(env(Backend::Embedded));
    let admin = cp.admin_token().await;
    let user = workspace_token(&cp, &admin, "user").await;
    let code = tempfile::tempdir().expect("code");
    let file = code.path().join("broken.py");
    std::fs::write(
        &file,
        "from levers9 import Cron, function\n\n\
         @function(schedule=Cron('*/5 * * *'))\n\
         def f():\n    pass\n",
    )
    .expect("write app");

    let out = deploy(&cp, &user, &file);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cron expression '*/5 * * *' does not parse (4 fields)"),
        "{stderr}"
    );

    // A client that skips the SDK.
    let stub_id = stub(&cp, &user, "broken.py", "f").await;
    for (kind, says) in [
        (
            schedule::Kind::Cron("0 25 * * *".into()),
            "the schedule of \"f\": cron expression \"0 25 * * *\" does not parse",
        ),
        (
            schedule::Kind::PeriodSeconds(0),
            "the schedule of \"f\": a period of 0 seconds is not valid",
        ),
    ] {
        let request = DeployRequest {
            app_name: "broken".into(),
            functions: vec![DeployedFunction {
                function_name: "f".into(),
                stub_id: stub_id.clone(),
                schedule: Some(Schedule { kind: Some(kind) }),
                endpoint: None,
            }],
        };
        let refused = cp
            .functions()
            .await
            .deploy(with_token(request, &user))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
        assert!(refused.message().starts_with(says), "{}", refused.message());
    }
    let schedules = cp
        .functions()
        .await
        .list_schedules(with_token(ListSchedulesRequest {}, &user))
        .await
        .expect("list")
        .into_inner()
        .schedules;
    assert!(schedules.is_empty(), "{schedules:?}");
}

/// Two replicas on Postgres and Redis; the one holding the schedules lease
/// is killed with SIGKILL between ticks. The other takes the lease over and
/// the ticks go on; no tick runs twice.
#[tokio::test]
async fn killing_the_replica_that_fires_neither_doubles_nor_stops_the_ticks() {
    let env = env(Backend::Servers);
    let first = Controlplane::start_with(env.clone());
    let admin = first.admin_token().await;
    first.wait_for_log(FIRES, Duration::from_secs(30)).await;
    let second = Controlplane::start_with(env);
    let worker = Worker::start(&second, &admin, "default", "runc").await;
    let user = workspace_token(&second, &admin, "user").await;
    let code = tempfile::tempdir().expect("code");
    let file = code.path().join("pulse.py");
    std::fs::write(&file, APP).expect("write app");
    let out = deploy(&second, &user, &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let logs = || format!("{}\n--------\n{}", second.log(), worker.log());
    let before = complete_runs(&second, &user, 0, 2, &logs).await;
    let fired_before = *assert_one_run_per_tick(&before).last().expect("a tick");

    drop(first);
    second.wait_for_log(FIRES, Duration::from_secs(30)).await;
    let all = complete_runs(&second, &user, fired_before, 2, &logs).await;

    let ticks = assert_one_run_per_tick(&all);
    assert!(
        ticks.iter().filter(|t| **t > fired_before).count() >= 2,
        "{ticks:?}"
    );
    let schedules = second
        .functions()
        .await
        .list_schedules(with_token(ListSchedulesRequest {}, &user))
        .await
        .expect("list")
        .into_inner()
        .schedules;
    let beat = schedules
        .iter()
        .find(|s| s.function_name == "beat")
        .expect("beat's schedule");
    assert!(beat.last_task_id.starts_with("t-s"), "{beat:?}");
}
