//! The function dispatcher's state machine on the embedded backends (SQLite
//! and the in-process hot state). The test plays the scheduler and a worker:
//! it places the containers the dispatcher asks for, reads the worker's
//! inbox and answers as the worker's stream would.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::stream::BoxStream;
use futures::StreamExt;
use levers9_api::v1::{
    controlplane_message, run_event, CancelInput, ControlplaneMessage, RunEvent, StubConfig,
    TaskInput, TaskOutcome,
};
use levers9_controlplane::fleet::records::state;
use levers9_controlplane::fleet::scheduler::BACKLOG;
use levers9_controlplane::fleet::{inbox, Fleet, SecretOpener};
use levers9_controlplane::functions::spec::StubSpec;
use levers9_controlplane::functions::{dispatcher, DispatchEvent, TaskState, Ticket};
use levers9_seal::{Key, Keyring};
use levers9_state::{HotState, MemoryState};
use levers9_store::{
    task_state, FunctionStore, NewDeployment, NewTask, NewToken, NewWorkspace, RecordStore,
    SqliteStore, StubRecord, TokenType,
};
use prost::Message;
use tokio::sync::watch;

const WORKER: &str = "w1";
const WAIT: Duration = Duration::from_secs(5);

struct Rig {
    state: Arc<MemoryState>,
    store: Arc<SqliteStore>,
    fleet: Fleet,
    tasks: TaskState,
    workspace: String,
    parts: dispatcher::Parts,
    stopped: watch::Receiver<bool>,
    _stop: watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

async fn rig() -> Rig {
    let rig = idle_rig().await;
    rig.start();
    rig
}

/// A rig whose dispatcher has not started yet.
async fn idle_rig() -> Rig {
    let dir = tempfile::tempdir().expect("dir");
    let store = Arc::new(
        SqliteStore::open(&dir.path().join("r.db"))
            .await
            .expect("sqlite"),
    );
    let workspace = uuid::Uuid::now_v7().to_string();
    let token = NewToken {
        id: uuid::Uuid::now_v7().to_string(),
        workspace_id: workspace.clone(),
        token_type: TokenType::Admin,
        description: String::new(),
        hash: uuid::Uuid::new_v4().as_bytes().repeat(2),
        created_at: Utc::now(),
    };
    let new = NewWorkspace {
        id: workspace.clone(),
        name: "ws".into(),
        created_at: Utc::now(),
    };
    store.create_workspace(new, token).await.expect("workspace");
    let state = Arc::new(MemoryState::new());
    let tasks = TaskState::new(state.clone(), Duration::from_secs(3600), "test");
    let fleet = Fleet::new(
        state.clone(),
        Duration::from_secs(30),
        BTreeMap::new(),
        SecretOpener {
            sealed: store.clone(),
            keyring: Keyring::new(Key::from_bytes([7; 32]), vec![]),
        },
        tasks.clone(),
    );
    let (stop, stopped) = watch::channel(false);
    let parts = dispatcher::Parts {
        store: store.clone(),
        tasks: tasks.clone(),
        fleet: fleet.clone(),
    };
    let router = tasks.clone();
    let routed = stopped.clone();
    tokio::spawn(async move { router.route(routed).await });
    Rig {
        state,
        store,
        fleet,
        tasks,
        workspace,
        parts,
        stopped,
        _stop: stop,
        _dir: dir,
    }
}

impl Rig {
    /// Starts the dispatcher: it takes the lease at once.
    fn start(&self) {
        let run = dispatcher::run(self.parts.clone(), "test".into(), self.stopped.clone());
        tokio::spawn(run);
    }

    async fn stub(&self, config: StubConfig) -> StubRecord {
        let spec = StubSpec::from_config(config, "registry.test/python:3.11".into()).expect("spec");
        let stub = StubRecord {
            id: format!("st-{}", uuid::Uuid::now_v7().simple()),
            workspace_id: self.workspace.clone(),
            name: "app.f".into(),
            code_digest: format!("sha256:{}", "a".repeat(64)),
            sdk_digest: format!("sha256:{}", "b".repeat(64)),
            module_path: "app.py".into(),
            function_name: "f".into(),
            config_json: spec.to_json(),
            created_at: Utc::now(),
        };
        self.store.get_or_create_stub(stub).await.expect("stub")
    }

    /// Deploys `stub` as the next version of the app "app" (what
    /// `levers9 deploy` stores).
    async fn deploy(&self, stub: &StubRecord) {
        let deployment = NewDeployment {
            workspace_id: self.workspace.clone(),
            app_name: "app".into(),
            functions: vec![("f".into(), stub.id.clone())],
            schedules: Vec::new(),
            endpoints: Vec::new(),
            deployed_by: "token".into(),
            at: Utc::now(),
        };
        self.store.deploy(deployment).await.expect("deploy");
    }

    /// The containers WORKER is told to stop next, `count` of them.
    async fn stops(&self, count: usize) -> std::collections::BTreeSet<String> {
        let mut stopped = std::collections::BTreeSet::new();
        while stopped.len() < count {
            match self.inbox().await {
                controlplane_message::Kind::Stop(stop) => stopped.insert(stop.container_id),
                other => panic!("expected a stop, got {other:?}"),
            };
        }
        stopped
    }

    /// Submits one task the way the FunctionService does; its events go to
    /// the returned stream.
    async fn submit(&self, stub: &StubRecord) -> (String, BoxStream<'static, Vec<u8>>) {
        let task_id = format!("t-{}", uuid::Uuid::now_v7().simple());
        let (reply, events) = self.tasks.open_reply().await.expect("reply");
        let events = events.boxed();
        let row = NewTask {
            id: task_id.clone(),
            workspace_id: self.workspace.clone(),
            stub_id: stub.id.clone(),
            function_name: stub.function_name.clone(),
            created_at: Utc::now(),
        };
        self.store.insert_tasks(&[row]).await.expect("insert");
        let ticket = Ticket {
            task_id: task_id.clone(),
            reply,
            index: 0,
        };
        self.tasks
            .put_input(&ticket, b"input")
            .await
            .expect("input");
        self.tasks
            .tell(&DispatchEvent::Submitted {
                workspace_id: self.workspace.clone(),
                stub_id: stub.id.clone(),
                tasks: vec![ticket],
            })
            .await
            .expect("tell");
        (task_id, events)
    }

    /// Plays the scheduler: the next requested container, placed on WORKER.
    async fn place(&self) -> String {
        let id = self
            .state
            .pop(BACKLOG, WAIT)
            .await
            .expect("pop")
            .expect("a container was requested");
        let id = String::from_utf8(id).expect("utf-8");
        let mut container = self
            .fleet
            .container(&id)
            .await
            .expect("get")
            .expect("record");
        container.state = state::RUNNING.into();
        container.worker_id = WORKER.into();
        self.fleet.put_container(&container).await.expect("put");
        id
    }

    /// Plays the scheduler and the runner: the next requested container,
    /// placed and ready for inputs.
    async fn ready_container(&self) -> String {
        let id = self.place().await;
        self.tell(DispatchEvent::RunnerReady {
            container_id: id.clone(),
        })
        .await;
        id
    }

    /// A warm container of `stub` that ran one input fast, so the next
    /// inputs go to its buffer too.
    async fn fast_container(&self, stub: &StubRecord) -> String {
        let (_, _events) = self.submit(stub).await;
        let container = self.ready_container().await;
        let input = self.input().await;
        self.finish(&input, task_state::COMPLETE, "").await;
        container
    }

    /// Plays the caller cancelling `task_id`; the cancel its worker gets.
    async fn cancel(&self, task_id: &str) -> CancelInput {
        self.tell(DispatchEvent::Cancel {
            task_id: task_id.into(),
        })
        .await;
        match self.inbox().await {
            controlplane_message::Kind::CancelInput(cancel) => cancel,
            other => panic!("expected a cancel, got {other:?}"),
        }
    }

    /// Plays the worker reporting that a container exited with `code`.
    async fn exited(&self, container_id: &str, code: i32) {
        self.ended(container_id, state::EXITED, code, "").await;
    }

    /// Plays the reaper declaring WORKER lost with the container on it.
    async fn lost(&self, container_id: &str) {
        let reason = "worker w1 (node-1) stopped sending heartbeats for 30 s and was declared lost";
        self.ended(container_id, state::LOST, 0, reason).await;
    }

    async fn ended(&self, container_id: &str, final_state: &str, code: i32, message: &str) {
        let mut ended = self
            .fleet
            .container(container_id)
            .await
            .expect("get")
            .expect("record");
        ended.state = final_state.into();
        ended.exit_code = code;
        ended.message = message.into();
        self.fleet.put_container(&ended).await.expect("put");
        self.tell(DispatchEvent::ContainerEnded {
            container_id: container_id.into(),
        })
        .await;
    }

    async fn no_container_requested(&self) {
        let popped = self
            .state
            .pop(BACKLOG, Duration::from_millis(500))
            .await
            .expect("pop");
        assert!(
            popped.is_none(),
            "a container was requested when a warm one had room"
        );
    }

    async fn tell(&self, event: DispatchEvent) {
        self.tasks.tell(&event).await.expect("tell");
    }

    /// Plays the worker's stream: the next message for WORKER.
    async fn inbox(&self) -> controlplane_message::Kind {
        let bytes = self
            .state
            .pop(&inbox::queue(WORKER), WAIT)
            .await
            .expect("pop")
            .expect("a message for the worker");
        ControlplaneMessage::decode(bytes.as_slice())
            .expect("decode")
            .kind
            .expect("kind")
    }

    async fn input(&self) -> TaskInput {
        match self.inbox().await {
            controlplane_message::Kind::TaskInput(input) => input,
            other => panic!("expected an input, got {other:?}"),
        }
    }

    /// Plays the worker's stream reporting how an attempt ended.
    async fn finish(&self, input: &TaskInput, outcome: &str, message: &str) {
        // As the worker's stream does: neither ends the task.
        if outcome != "lost" && outcome != task_state::CANCELLED {
            let stored = TaskOutcome {
                task_id: input.task_id.clone(),
                state: outcome.into(),
                payload: b"result".to_vec(),
                message: message.into(),
                ..TaskOutcome::default()
            };
            self.tasks.put_outcome(&stored).await.expect("outcome");
        }
        self.tell(DispatchEvent::Finished {
            container_id: input.container_id.clone(),
            task_id: input.task_id.clone(),
            state: outcome.into(),
            message: message.into(),
            delivered: false,
        })
        .await;
    }

    /// Each attempt of `task_id`: its number and outcome, oldest first.
    async fn outcomes(&self, task_id: &str) -> Vec<(u32, String)> {
        let attempts = self.store.task_attempts(task_id).await.expect("attempts");
        attempts
            .into_iter()
            .map(|a| (a.attempt, a.outcome))
            .collect()
    }

    async fn row(&self, task_id: &str, final_state: &str) -> levers9_store::TaskRecord {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let row = self
                .store
                .get_task(&self.workspace, task_id)
                .await
                .expect("get")
                .expect("row");
            if row.state == final_state {
                return row;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "task is {} ({}), not {final_state}",
                row.state,
                row.message
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn next_event(events: &mut BoxStream<'static, Vec<u8>>) -> run_event::Kind {
    let bytes = tokio::time::timeout(WAIT, events.next())
        .await
        .expect("an event in time")
        .expect("the channel is open");
    RunEvent::decode(bytes.as_slice())
        .expect("decode")
        .kind
        .expect("kind")
}

#[tokio::test]
async fn a_warm_container_takes_the_next_input_without_a_new_container() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (first, mut events) = rig.submit(&stub).await;
    let container = rig.ready_container().await;
    let input = rig.input().await;
    assert_eq!((input.task_id.as_str(), input.attempt), (first.as_str(), 1));
    assert_eq!(input.container_id, container);
    assert_eq!(input.timeout_ms, 300_000, "the default timeout");
    rig.finish(&input, task_state::COMPLETE, "").await;
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => assert_eq!(notice.state, task_state::COMPLETE),
        other => panic!("expected the result, got {other:?}"),
    }
    rig.row(&first, task_state::COMPLETE).await;

    let (second, _) = rig.submit(&stub).await;
    let input = rig.input().await;
    assert_eq!(input.task_id, second);
    assert_eq!(input.container_id, container, "the warm container took it");
    rig.no_container_requested().await;
}

/// A task submitted just before a dispatcher takes the lease is both in
/// the unfinished rows it takes over and in the events it then reads: it
/// is queued once, and runs once.
#[tokio::test]
async fn a_task_submitted_as_the_dispatcher_starts_runs_once() {
    let rig = idle_rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, mut events) = rig.submit(&stub).await;
    rig.start();
    rig.ready_container().await;
    let input = rig.input().await;
    assert_eq!((input.task_id.as_str(), input.attempt), (task.as_str(), 1));
    rig.no_container_requested().await;
    rig.finish(&input, task_state::COMPLETE, "").await;
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => assert_eq!(notice.state, task_state::COMPLETE),
        other => panic!("expected the result, got {other:?}"),
    }
    let more = rig
        .state
        .pop(&inbox::queue(WORKER), Duration::from_millis(300))
        .await
        .expect("pop");
    assert!(more.is_none(), "the task was sent again");
}

#[tokio::test]
async fn a_failed_attempt_is_retried_within_the_budget_then_fails() {
    let rig = rig().await;
    let stub = rig
        .stub(StubConfig {
            retries: 1,
            ..StubConfig::default()
        })
        .await;
    let (task, mut events) = rig.submit(&stub).await;
    rig.ready_container().await;
    let first = rig.input().await;
    rig.finish(&first, "error", "ValueError: boom").await;
    match next_event(&mut events).await {
        run_event::Kind::Retrying(retry) => {
            assert_eq!(retry.attempt, 2);
            assert_eq!(retry.reason, "ValueError: boom");
        }
        other => panic!("expected a retry, got {other:?}"),
    }
    let second = rig.input().await;
    assert_eq!(
        (second.task_id.as_str(), second.attempt),
        (task.as_str(), 2)
    );
    // An input the container never ran goes back without using an attempt,
    // to another container: one that lost an input is on its way out.
    rig.finish(&second, "lost", "container gone").await;
    let replacement = rig.ready_container().await;
    let again = rig.input().await;
    assert_eq!((again.attempt, &again.container_id), (2, &replacement));
    rig.finish(&again, "error", "ValueError: boom").await;
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => assert_eq!(notice.state, task_state::ERROR),
        other => panic!("expected the result, got {other:?}"),
    }
    let row = rig.row(&task, task_state::ERROR).await;
    assert_eq!(row.attempts, 2);
}

/// A warm container of a fast function is sent its next input before it
/// finished the last (a buffer in its runner's queue); one of a slow
/// function is not, and a new container takes the queued input.
#[tokio::test]
async fn fast_functions_get_their_next_input_early_and_slow_ones_wait() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let container = rig.fast_container(&stub).await;
    let (_, _a) = rig.submit(&stub).await;
    let (_, _b) = rig.submit(&stub).await;
    let a = rig.input().await;
    let b = rig.input().await;
    assert_eq!(
        (&a.container_id, &b.container_id),
        (&container, &container),
        "the second input went to the busy container's buffer"
    );

    let slow = rig
        .stub(StubConfig {
            keep_warm_seconds: 60,
            ..StubConfig::default()
        })
        .await;
    let (_, _events) = rig.submit(&slow).await;
    let busy = rig.ready_container().await;
    let input = rig.input().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    rig.finish(&input, task_state::COMPLETE, "").await;
    let (_, _a) = rig.submit(&slow).await;
    let (_, _b) = rig.submit(&slow).await;
    assert_eq!(rig.input().await.container_id, busy);
    let another = rig.ready_container().await;
    assert_eq!(
        rig.input().await.container_id,
        another,
        "the queued input waited for a container with a free slot"
    );
}

#[tokio::test]
async fn a_request_still_waiting_for_a_worker_is_withdrawn_once_the_queue_is_empty() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (_, _a) = rig.submit(&stub).await;
    let (_, _b) = rig.submit(&stub).await;
    let first = rig.ready_container().await;
    let waiting = String::from_utf8(
        rig.state
            .pop(BACKLOG, WAIT)
            .await
            .expect("pop")
            .expect("a second container was requested for the second input"),
    )
    .expect("utf-8");
    let input = rig.input().await;
    rig.finish(&input, task_state::COMPLETE, "").await;
    // The second input goes to the first container; nothing is queued.
    assert_eq!(rig.input().await.container_id, first);
    let deadline = tokio::time::Instant::now() + WAIT;
    let reason = loop {
        let marks = rig
            .fleet
            .withdrawals(std::slice::from_ref(&waiting))
            .await
            .expect("read");
        if let Some(Some(reason)) = marks.into_iter().next() {
            break reason;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the request was not withdrawn"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        reason.starts_with("withdrawn before a worker took it"),
        "{reason}"
    );
    assert_eq!(
        rig.fleet.withdrawals(&[first]).await.expect("read"),
        [None],
        "a placed container is not withdrawn"
    );
}

#[tokio::test]
async fn an_idle_container_is_stopped_after_its_keep_warm_window() {
    let rig = rig().await;
    let stub = rig
        .stub(StubConfig {
            keep_warm_seconds: 1,
            ..StubConfig::default()
        })
        .await;
    let (_, _events) = rig.submit(&stub).await;
    let container = rig.ready_container().await;
    let input = rig.input().await;
    rig.finish(&input, task_state::COMPLETE, "").await;
    match rig.inbox().await {
        controlplane_message::Kind::Stop(stop) => assert_eq!(stop.container_id, container),
        other => panic!("expected a stop, got {other:?}"),
    }
}

#[tokio::test]
async fn a_container_that_cannot_start_fails_the_queue_with_the_reason() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, mut events) = rig.submit(&stub).await;
    let container_id = rig.place().await;
    let mut container = rig
        .fleet
        .container(&container_id)
        .await
        .expect("get")
        .expect("record");
    container.state = state::FAILED.into();
    container.message = "cannot pull image registry.test/python:3.11: not found".into();
    rig.fleet.put_container(&container).await.expect("put");
    rig.fleet.publish_end(&container_id).await.expect("end");
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => {
            assert_eq!(notice.state, task_state::ERROR);
            assert!(
                notice.message.contains("failed to start")
                    && notice.message.contains("cannot pull image"),
                "{}",
                notice.message
            );
        }
        other => panic!("expected the result, got {other:?}"),
    }
    rig.row(&task, task_state::ERROR).await;
}

/// A fast function's container holds inputs beyond its concurrency. One
/// cancelled before its runner started it is dropped there, keeps its
/// slot until the worker says so, and the container stays warm.
#[tokio::test]
async fn a_cancelled_input_its_runner_has_not_started_is_dropped_and_the_container_stays() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let container = rig.fast_container(&stub).await;
    let (_, _a) = rig.submit(&stub).await;
    let (waiting, mut events) = rig.submit(&stub).await;
    let a = rig.input().await;
    let b = rig.input().await;
    assert_eq!((&b.task_id, &b.container_id), (&waiting, &container));

    let cancel = rig.cancel(&waiting).await;
    assert_eq!(
        (cancel.container_id, cancel.task_id),
        (container.clone(), waiting.clone())
    );
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => assert_eq!(notice.state, task_state::CANCELLED),
        other => panic!("expected the result, got {other:?}"),
    }
    rig.finish(&b, task_state::CANCELLED, "cancelled before it started")
        .await;
    rig.finish(&a, task_state::COMPLETE, "").await;
    let (next, _) = rig.submit(&stub).await;
    let input = rig.input().await;
    assert_eq!((&input.task_id, &input.container_id), (&next, &container));
    rig.no_container_requested().await;
    rig.row(&waiting, task_state::CANCELLED).await;
}

/// A cancelled input that already runs cannot be interrupted: its worker
/// stops the container, and the other input it held runs again elsewhere
/// without using an attempt.
#[tokio::test]
async fn a_cancelled_input_already_running_stops_its_container_and_the_others_run_again() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let first = rig.fast_container(&stub).await;
    let (running, _) = rig.submit(&stub).await;
    let (other, mut events) = rig.submit(&stub).await;
    assert_eq!(rig.input().await.task_id, running);
    assert_eq!(rig.input().await.task_id, other);

    assert_eq!(rig.cancel(&running).await.task_id, running);
    // The runner refused: the worker stopped the container.
    rig.exited(&first, 143).await;
    let second = rig.ready_container().await;
    let input = rig.input().await;
    assert_eq!(
        (
            input.task_id.as_str(),
            input.attempt,
            input.container_id.as_str()
        ),
        (other.as_str(), 1, second.as_str())
    );
    rig.finish(&input, task_state::COMPLETE, "").await;
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => assert_eq!(notice.state, task_state::COMPLETE),
        other => panic!("expected the result without a retry, got {other:?}"),
    }
    rig.row(&running, task_state::CANCELLED).await;
    rig.row(&other, task_state::COMPLETE).await;
}

/// A drained worker's container takes no new input; its input comes back
/// when it ends and runs elsewhere under the same attempt (no retry used);
/// once idle, a draining container is stopped.
#[tokio::test]
async fn a_draining_workers_inputs_are_handed_back_without_using_an_attempt() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, mut events) = rig.submit(&stub).await;
    let first = rig.ready_container().await;
    assert_eq!(rig.input().await.attempt, 1);
    rig.tell(DispatchEvent::Drain {
        worker_id: WORKER.into(),
        draining: true,
    })
    .await;
    // The worker's drain grace ran out: it stopped the container.
    rig.exited(&first, 143).await;
    rig.tell(DispatchEvent::Drain {
        worker_id: WORKER.into(),
        draining: false,
    })
    .await;
    let second = rig.ready_container().await;
    let input = rig.input().await;
    assert_eq!((input.task_id.as_str(), input.attempt), (task.as_str(), 1));
    assert_eq!(input.container_id, second);

    rig.tell(DispatchEvent::Drain {
        worker_id: WORKER.into(),
        draining: true,
    })
    .await;
    rig.finish(&input, task_state::COMPLETE, "").await;
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => assert_eq!(notice.state, task_state::COMPLETE),
        other => panic!("expected the result without a retry, got {other:?}"),
    }
    match rig.inbox().await {
        controlplane_message::Kind::Stop(stop) => assert_eq!(stop.container_id, second),
        other => panic!("expected the idle draining container stopped, got {other:?}"),
    }
    rig.row(&task, task_state::COMPLETE).await;
    let outcomes = rig.outcomes(&task).await;
    assert_eq!(
        outcomes,
        [(1, "requeued".into()), (1, task_state::COMPLETE.into())]
    );
}

/// A worker lost under a `retries=0` call (a reclaimed spot node): the
/// input runs again in a new container under the same attempt, the caller
/// hears why and then gets the result, and the attempt says it was lost.
#[tokio::test]
async fn a_lost_workers_input_runs_again_without_using_a_retry() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, mut events) = rig.submit(&stub).await;
    let first = rig.ready_container().await;
    assert_eq!(rig.input().await.attempt, 1);

    rig.lost(&first).await;
    match next_event(&mut events).await {
        run_event::Kind::Retrying(retrying) => {
            assert_eq!(retrying.attempt, 1, "no retry is used");
            assert!(
                retrying.reason.contains("declared lost")
                    && retrying.reason.contains("infrastructure retry 1 of 3"),
                "{}",
                retrying.reason
            );
        }
        other => panic!("expected a retry notice, got {other:?}"),
    }
    let second = rig.ready_container().await;
    let input = rig.input().await;
    assert_eq!(
        (input.attempt, input.container_id.as_str()),
        (1, second.as_str())
    );
    rig.finish(&input, task_state::COMPLETE, "").await;
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => assert_eq!(notice.state, task_state::COMPLETE),
        other => panic!("expected the result, got {other:?}"),
    }
    rig.row(&task, task_state::COMPLETE).await;
    let outcomes = rig.outcomes(&task).await;
    assert_eq!(
        outcomes,
        [(1, "lost".into()), (1, task_state::COMPLETE.into())]
    );
    let attempts = rig.store.task_attempts(&task).await.expect("attempts");
    assert!(attempts[0].message.contains("infrastructure retry 1 of 3"));
}

/// Lost infrastructure has its own bound: after three lost workers the
/// fourth counts as a failed attempt, so with `retries=0` the task ends
/// with the reason rather than looping.
#[tokio::test]
async fn a_task_that_loses_its_worker_past_the_bound_fails_with_the_reason() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, _events) = rig.submit(&stub).await;
    for _ in 0..4 {
        let container = rig.ready_container().await;
        assert_eq!(rig.input().await.attempt, 1);
        rig.lost(&container).await;
    }
    let ended = rig.row(&task, task_state::ERROR).await;
    assert!(ended.message.contains("declared lost"), "{}", ended.message);
    let outcomes: Vec<String> = rig
        .outcomes(&task)
        .await
        .into_iter()
        .map(|(_, o)| o)
        .collect();
    assert_eq!(outcomes, ["lost", "lost", "lost", task_state::ERROR]);
}

/// `min_containers` of a deployed stub: its container is asked for with no
/// call, serves the first call, outlives its keep-warm window, and is
/// replaced when its worker is lost.
#[tokio::test]
async fn a_deployed_floor_is_kept_warm_and_replaced_when_its_worker_is_lost() {
    let rig = rig().await;
    let stub = rig
        .stub(StubConfig {
            min_containers: 1,
            keep_warm_seconds: 1,
            ..StubConfig::default()
        })
        .await;
    rig.deploy(&stub).await;
    let warm = rig.ready_container().await;

    let (task, _events) = rig.submit(&stub).await;
    let input = rig.input().await;
    assert_eq!(
        input.container_id, warm,
        "the call goes to the floor's container"
    );
    rig.finish(&input, task_state::COMPLETE, "").await;
    rig.row(&task, task_state::COMPLETE).await;
    // Past the keep-warm window (1 s) it is not stopped.
    let message = rig
        .state
        .pop(&inbox::queue(WORKER), Duration::from_millis(2500))
        .await
        .expect("pop");
    assert!(
        message.is_none(),
        "the floor's container was told something"
    );
    rig.no_container_requested().await;

    rig.lost(&warm).await;
    let replacement = rig.ready_container().await;
    assert_ne!(replacement, warm);
    let (_, _events) = rig.submit(&stub).await;
    assert_eq!(rig.input().await.container_id, replacement);
}

/// A stub called but never deployed has no floor: nothing is asked for
/// before a call.
#[tokio::test]
async fn min_containers_of_a_stub_that_is_not_deployed_asks_for_nothing() {
    let rig = rig().await;
    rig.stub(StubConfig {
        min_containers: 1,
        ..StubConfig::default()
    })
    .await;
    let popped = rig
        .state
        .pop(BACKLOG, Duration::from_millis(2500))
        .await
        .expect("pop");
    assert!(
        popped.is_none(),
        "a container was asked for an undeployed stub"
    );
}

/// A redeploy with a lower floor lets the extra containers go after their
/// keep-warm window, and one with another stub lets the old stub's all go.
#[tokio::test]
async fn a_lower_floor_lets_the_extra_containers_go() {
    let rig = rig().await;
    let two = rig
        .stub(StubConfig {
            min_containers: 2,
            keep_warm_seconds: 1,
            ..StubConfig::default()
        })
        .await;
    rig.deploy(&two).await;
    let first = rig.ready_container().await;
    let second = rig.ready_container().await;
    rig.no_container_requested().await;

    let one = rig
        .stub(StubConfig {
            min_containers: 1,
            keep_warm_seconds: 1,
            ..StubConfig::default()
        })
        .await;
    rig.deploy(&one).await;
    let kept = rig.ready_container().await;
    assert_eq!(rig.stops(2).await, [first, second].into_iter().collect());
    let message = rig
        .state
        .pop(&inbox::queue(WORKER), Duration::from_millis(2500))
        .await
        .expect("pop");
    assert!(
        message.is_none(),
        "the new floor's container was told something"
    );
    rig.no_container_requested().await;

    let none = rig
        .stub(StubConfig {
            keep_warm_seconds: 1,
            ..StubConfig::default()
        })
        .await;
    rig.deploy(&none).await;
    assert_eq!(rig.stops(1).await, [kept].into_iter().collect());
}

/// A floor deployed while no dispatcher ran (a controlplane restart) is
/// asked for as soon as one starts.
#[tokio::test]
async fn a_floor_deployed_before_the_dispatcher_starts_is_asked_for_when_it_starts() {
    let rig = idle_rig().await;
    let stub = rig
        .stub(StubConfig {
            min_containers: 1,
            ..StubConfig::default()
        })
        .await;
    rig.deploy(&stub).await;
    rig.start();
    let warm = rig.ready_container().await;
    let (_, _events) = rig.submit(&stub).await;
    assert_eq!(rig.input().await.container_id, warm);
}

/// After a burst, keep-warm expiry stops the containers above the floor
/// and keeps the floor's.
#[tokio::test]
async fn keep_warm_expiry_scales_down_to_the_floor_not_to_zero() {
    let rig = rig().await;
    let stub = rig
        .stub(StubConfig {
            min_containers: 1,
            keep_warm_seconds: 1,
            ..StubConfig::default()
        })
        .await;
    rig.deploy(&stub).await;
    let first = rig.ready_container().await;
    let (_, _a) = rig.submit(&stub).await;
    let (_, _b) = rig.submit(&stub).await;
    let one = rig.input().await;
    assert_eq!(one.container_id, first);
    let second = rig.ready_container().await;
    let two = rig.input().await;
    assert_eq!(two.container_id, second);
    rig.finish(&one, task_state::COMPLETE, "").await;
    rig.finish(&two, task_state::COMPLETE, "").await;

    assert_eq!(rig.stops(1).await.len(), 1);
    let message = rig
        .state
        .pop(&inbox::queue(WORKER), Duration::from_millis(2500))
        .await
        .expect("pop");
    assert!(
        message.is_none(),
        "the floor's container was told something"
    );
    rig.no_container_requested().await;
}
