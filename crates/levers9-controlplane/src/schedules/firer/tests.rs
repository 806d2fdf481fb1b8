//! The firer against a real SQLite store and the in-process hot state, by
//! a clock the tests move by hand.

use std::sync::atomic::{AtomicI64, Ordering};

use chrono::Utc;
use levers9_state::{MemoryState, Queues};
use levers9_store::{
    NewDeployment, NewSchedule, NewToken, NewWorkspace, RecordStore, SqliteStore, StubRecord,
    TokenType,
};
use tempfile::TempDir;

use super::*;
use crate::functions::DISPATCH;

/// 2026-01-01T00:00:00Z.
const NEW_YEAR: i64 = 1_767_225_600;

#[derive(Default)]
struct HandClock(AtomicI64);

impl HandClock {
    fn set(&self, t: i64) {
        self.0.store(t, Ordering::SeqCst);
    }
}

impl Clock for HandClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

struct Setup {
    store: Arc<SqliteStore>,
    state: Arc<MemoryState>,
    clock: Arc<HandClock>,
    workspace_id: String,
    _dir: TempDir,
}

impl Setup {
    /// A workspace with the app "jobs" whose function "tick" runs every
    /// `period` seconds, deployed at `deployed_at`.
    async fn new(period: u64, deployed_at: i64) -> Self {
        let dir = TempDir::new().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("r.db")).await.unwrap());
        let workspace_id = "ws-1".to_owned();
        store
            .create_workspace(
                NewWorkspace {
                    id: workspace_id.clone(),
                    name: "team".into(),
                    created_at: Utc::now(),
                },
                NewToken {
                    id: "tok-1".into(),
                    workspace_id: workspace_id.clone(),
                    token_type: TokenType::Admin,
                    description: String::new(),
                    hash: vec![7; 32],
                    created_at: Utc::now(),
                },
            )
            .await
            .unwrap();
        store
            .get_or_create_stub(StubRecord {
                id: "stub-1".into(),
                workspace_id: workspace_id.clone(),
                name: "tick".into(),
                code_digest: "sha256:c0de".into(),
                sdk_digest: "sha256:5d4".into(),
                module_path: "jobs".into(),
                function_name: "tick".into(),
                config_json: "{}".into(),
                created_at: Utc::now(),
            })
            .await
            .unwrap();
        let spec = ScheduleSpec::period(period).unwrap();
        store
            .deploy(NewDeployment {
                workspace_id: workspace_id.clone(),
                app_name: "jobs".into(),
                functions: vec![("tick".into(), "stub-1".into())],
                schedules: vec![NewSchedule {
                    id: ticks::schedule_id(&workspace_id, "jobs", "tick"),
                    function_name: "tick".into(),
                    spec: spec.to_stored(),
                    next_tick: ticks::first_tick(&spec, deployed_at),
                }],
                endpoints: Vec::new(),
                deployed_by: "tok-1".into(),
                at: Utc::now(),
            })
            .await
            .unwrap();
        let clock = Arc::new(HandClock::default());
        clock.set(deployed_at);
        Self {
            store,
            state: Arc::new(MemoryState::new()),
            clock,
            workspace_id,
            _dir: dir,
        }
    }

    /// A firer as one replica runs it.
    fn firer(&self, replica: &str) -> Firer {
        let parts = Parts {
            store: self.store.clone(),
            tasks: TaskState::new(self.state.clone(), Duration::from_secs(60), replica),
        };
        Firer::new(parts, self.clock.clone())
    }

    /// The task ids the dispatcher was told of, in order.
    async fn told(&self) -> Vec<String> {
        let events = self.state.pop_many(DISPATCH, 1_000).await.unwrap();
        events
            .iter()
            .flat_map(|bytes| match serde_json::from_slice(bytes).unwrap() {
                DispatchEvent::Submitted { tasks, .. } => {
                    tasks.into_iter().map(|t| t.task_id).collect::<Vec<_>>()
                }
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    async fn task_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .store
            .list_tasks(&self.workspace_id, 1_000)
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect();
        ids.sort();
        ids
    }
}

fn tick_task(setup: &Setup, tick: i64) -> String {
    ticks::task_id(
        &ticks::schedule_id(&setup.workspace_id, "jobs", "tick"),
        tick,
    )
}

#[tokio::test]
async fn each_tick_is_submitted_once_as_a_pending_task_with_no_arguments() {
    let setup = Setup::new(2, NEW_YEAR + 1).await;
    let firer = setup.firer("r1");
    let mut submitted = Vec::new();
    for now in NEW_YEAR + 1..=NEW_YEAR + 9 {
        setup.clock.set(now);
        submitted.extend(firer.fire_due().await.unwrap());
        // Polling again within the same second fires nothing.
        assert!(firer.fire_due().await.unwrap().is_empty());
    }

    let expected: Vec<String> = [2, 4, 6, 8]
        .iter()
        .map(|k| tick_task(&setup, NEW_YEAR + k))
        .collect();
    assert_eq!(submitted, expected);
    assert_eq!(setup.told().await, expected);
    assert_eq!(setup.task_ids().await, expected);
    let parts_tasks = TaskState::new(setup.state.clone(), Duration::from_secs(60), "r2");
    let (_, payload) = parts_tasks.input(&expected[0]).await.unwrap().unwrap();
    assert_eq!(payload, NO_ARGUMENTS);
    let task = setup.store.find_task(&expected[0]).await.unwrap().unwrap();
    assert_eq!(task.state, levers9_store::TaskState::Pending);
    assert_eq!(task.function_name, "tick");

    let listed = setup
        .store
        .list_schedules(&setup.workspace_id)
        .await
        .unwrap();
    assert_eq!(listed[0].last_tick, Some(NEW_YEAR + 8));
    assert_eq!(listed[0].next_tick, NEW_YEAR + 10);
}

#[tokio::test]
async fn two_replicas_firing_at_once_submit_a_tick_once() {
    let setup = Setup::new(2, NEW_YEAR).await;
    let (a, b) = (setup.firer("r1"), setup.firer("r2"));
    let mut submitted = Vec::new();
    for now in NEW_YEAR..=NEW_YEAR + 10 {
        setup.clock.set(now);
        let (x, y) = tokio::join!(a.fire_due(), b.fire_due());
        submitted.extend(x.unwrap());
        submitted.extend(y.unwrap());
    }

    assert_eq!(submitted.len(), 5, "{submitted:?}");
    let mut unique = submitted.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 5);
    assert_eq!(setup.task_ids().await, unique);
}

#[tokio::test]
async fn ticks_missed_while_no_replica_ran_fire_once_on_start() {
    let setup = Setup::new(60, NEW_YEAR).await;
    let firer = setup.firer("r1");
    setup.clock.set(NEW_YEAR + 60);
    assert_eq!(firer.fire_due().await.unwrap().len(), 1);

    // Every replica was down for an hour.
    setup.clock.set(NEW_YEAR + 3_630);
    let after_restart = setup.firer("r2");
    let fired = after_restart.fire_due().await.unwrap();

    assert_eq!(fired, vec![tick_task(&setup, NEW_YEAR + 3_600)]);
    assert!(after_restart.fire_due().await.unwrap().is_empty());
    assert_eq!(setup.task_ids().await.len(), 2);
    let listed = setup
        .store
        .list_schedules(&setup.workspace_id)
        .await
        .unwrap();
    assert_eq!(listed[0].next_tick, NEW_YEAR + 3_660);
}

#[tokio::test]
async fn a_new_lease_holder_tells_the_dispatcher_of_a_run_left_pending() {
    let setup = Setup::new(2, NEW_YEAR).await;
    setup.clock.set(NEW_YEAR + 2);
    let fired = setup.firer("r1").fire_due().await.unwrap();
    // r1 "died" before its tell reached anyone.
    setup.told().await;

    let told = setup.firer("r2").resubmit_unstarted().await.unwrap();

    assert_eq!(told, fired);
    assert_eq!(setup.told().await, fired);
    // Once it runs, a later takeover leaves it alone.
    let started = levers9_store::TaskStart {
        task_id: fired[0].clone(),
        attempt: 1,
        container_id: "c".into(),
        worker_id: "w".into(),
        at: Utc::now(),
    };
    setup.store.start_tasks(&[started]).await.unwrap();
    assert!(setup
        .firer("r3")
        .resubmit_unstarted()
        .await
        .unwrap()
        .is_empty());
}
