//! The rig: a dispatcher on the embedded backends, with the test playing
//! the scheduler and a worker.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::stream::BoxStream;
use futures::StreamExt;
use levers9_api::v1::{
    controlplane_message, run_event, CancelInput, ControlplaneMessage, FinalTaskState, RunEvent,
    StubConfig, TaskInput, TaskOutcome,
};
use levers9_controlplane::fleet::records::ContainerState;
use levers9_controlplane::fleet::{inbox, Fleet};
use levers9_controlplane::functions::spec::StubSpec;
use levers9_controlplane::functions::{dispatcher, DispatchEvent, InputEnd, TaskState, Ticket};
use levers9_controlplane::scheduler::{Scheduling, BACKLOG};
use levers9_state::{MemoryState, Queues};
use levers9_store::{
    AttemptOutcome, FinalState, FunctionStore, NewDeployment, NewTask, NewToken, NewWorkspace,
    RecordStore, SqliteStore, StubRecord, TaskState as StoredState, TokenType,
};
use prost::Message;
use tokio::sync::watch;

pub const WORKER: &str = "w1";
pub const WAIT: Duration = Duration::from_secs(5);

pub struct Rig {
    pub state: Arc<MemoryState>,
    /// What the test reads and writes through (the dispatcher's database).
    pub store: Arc<dyn FunctionStore>,
    pub fleet: Fleet,
    pub tasks: TaskState,
    pub workspace: String,
    pub parts: dispatcher::Parts,
    pub stopped: watch::Receiver<bool>,
    _stop: watch::Sender<bool>,
    _dir: Option<tempfile::TempDir>,
}

pub async fn rig() -> Rig {
    let rig = idle_rig().await;
    rig.start();
    rig
}

/// A rig whose dispatcher has not started yet.
pub async fn idle_rig() -> Rig {
    let dir = tempfile::tempdir().expect("dir");
    let store = Arc::new(
        SqliteStore::open(&dir.path().join("r.db"))
            .await
            .expect("sqlite"),
    );
    idle_rig_on(store.clone(), store, Some(dir)).await
}

/// The URL of a fresh database on the test PostgreSQL.
pub fn fresh_postgres() -> String {
    let admin = std::env::var("LEVERS9_TEST_DATABASE_URL").unwrap_or_else(|_| {
        panic!("LEVERS9_TEST_DATABASE_URL is not set: run the tests with scripts/test-servers.sh")
    });
    let name = format!("l9disp_{}", uuid::Uuid::new_v4().simple());
    psql(&admin, &format!("CREATE DATABASE {name}"));
    let (server, _) = admin.rsplit_once('/').expect("url with a database");
    format!("{server}/{name}")
}

/// Runs `sql` on the database at `url`; its output.
pub fn psql(url: &str, sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .args([url, "-qAt", "-c", sql])
        .output()
        .expect("psql");
    assert!(
        out.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A rig on `store`, whose dispatcher writes through `dispatcher_store`
/// (the same database, or a pool of its own on it).
pub async fn idle_rig_on<S: RecordStore + FunctionStore>(
    store: Arc<S>,
    dispatcher_store: Arc<dyn FunctionStore>,
    dir: Option<tempfile::TempDir>,
) -> Rig {
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
        Arc::new(tasks.clone()),
    );
    let (stop, stopped) = watch::channel(false);
    let parts = dispatcher::Parts {
        store: dispatcher_store,
        tasks: tasks.clone(),
        scheduling: Scheduling::new(fleet.clone(), state.clone()),
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
    pub fn start(&self) {
        let run = dispatcher::run(self.parts.clone(), "test".into(), self.stopped.clone());
        tokio::spawn(run);
    }

    pub async fn stub(&self, config: StubConfig) -> StubRecord {
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
    pub async fn deploy(&self, stub: &StubRecord) {
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
    pub async fn stops(&self, count: usize) -> std::collections::BTreeSet<String> {
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
    pub async fn submit(&self, stub: &StubRecord) -> (String, BoxStream<'static, RunEvent>) {
        self.submit_row_by(stub, true).await
    }

    /// Submits one task as a `.remote()` on the dispatcher's replica does:
    /// its row goes to the dispatcher with it, written with its start.
    pub async fn submit_unwritten(
        &self,
        stub: &StubRecord,
    ) -> (String, BoxStream<'static, RunEvent>) {
        self.submit_row_by(stub, false).await
    }

    async fn submit_row_by(
        &self,
        stub: &StubRecord,
        written: bool,
    ) -> (String, BoxStream<'static, RunEvent>) {
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
        let rows = if written {
            self.store.insert_tasks(&[row]).await.expect("insert");
            Vec::new()
        } else {
            vec![row]
        };
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
                rows,
            })
            .await
            .expect("tell");
        (task_id, events)
    }

    /// Plays the scheduler: the next requested container, placed on WORKER.
    pub async fn place(&self) -> String {
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
        container.state = ContainerState::Running;
        container.worker_id = WORKER.into();
        self.fleet.put_container(&container).await.expect("put");
        id
    }

    /// Plays the scheduler and the runner: the next requested container,
    /// placed and ready for inputs.
    pub async fn ready_container(&self) -> String {
        let id = self.place().await;
        self.tell(DispatchEvent::RunnerReady {
            container_id: id.clone(),
        })
        .await;
        id
    }

    /// A warm container of `stub` that ran one input fast, so the next
    /// inputs go to its buffer too.
    pub async fn fast_container(&self, stub: &StubRecord) -> String {
        let (_, _events) = self.submit(stub).await;
        let container = self.ready_container().await;
        let input = self.input().await;
        self.finish(&input, InputEnd::Complete, "").await;
        container
    }

    /// Plays the caller cancelling `task_id`; the cancel its worker gets.
    pub async fn cancel(&self, task_id: &str) -> CancelInput {
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
    pub async fn exited(&self, container_id: &str, code: i32) {
        self.ended(container_id, ContainerState::Exited, code, "")
            .await;
    }

    /// Plays the reaper declaring WORKER lost with the container on it.
    pub async fn lost(&self, container_id: &str) {
        let reason = "worker w1 (node-1) stopped sending heartbeats for 30 s and was declared lost";
        self.ended(container_id, ContainerState::Lost, 0, reason)
            .await;
    }

    pub async fn ended(
        &self,
        container_id: &str,
        final_state: ContainerState,
        code: i32,
        message: &str,
    ) {
        let mut ended = self
            .fleet
            .container(container_id)
            .await
            .expect("get")
            .expect("record");
        ended.state = final_state;
        ended.exit_code = code;
        ended.message = message.into();
        self.fleet.put_container(&ended).await.expect("put");
        self.tell(DispatchEvent::ContainerEnded {
            container_id: container_id.into(),
        })
        .await;
    }

    pub async fn no_container_requested(&self) {
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

    pub async fn tell(&self, event: DispatchEvent) {
        self.tasks.tell(&event).await.expect("tell");
    }

    /// Plays the worker's stream: the next message for WORKER.
    pub async fn inbox(&self) -> controlplane_message::Kind {
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

    pub async fn input(&self) -> TaskInput {
        match self.inbox().await {
            controlplane_message::Kind::TaskInput(input) => input,
            other => panic!("expected an input, got {other:?}"),
        }
    }

    /// Plays the worker's stream reporting how an attempt ended.
    pub async fn finish(&self, input: &TaskInput, outcome: InputEnd, message: &str) {
        // As the worker's stream does: neither ends the task.
        let stored = match outcome {
            InputEnd::Complete => Some(FinalTaskState::Complete),
            InputEnd::Error => Some(FinalTaskState::Error),
            InputEnd::Timeout => Some(FinalTaskState::Timeout),
            InputEnd::Lost | InputEnd::Cancelled => None,
        };
        if let Some(state) = stored {
            let stored = TaskOutcome {
                task_id: input.task_id.clone(),
                state: state.into(),
                payload: b"result".to_vec(),
                message: message.into(),
                ..TaskOutcome::default()
            };
            self.tasks.put_outcome(&stored).await.expect("outcome");
        }
        self.tell(DispatchEvent::Finished {
            container_id: input.container_id.clone(),
            task_id: input.task_id.clone(),
            state: outcome,
            message: message.into(),
            delivered: false,
        })
        .await;
    }

    /// Plays the worker: `input` completes, and its caller hears so.
    pub async fn complete(&self, input: &TaskInput, events: &mut BoxStream<'static, RunEvent>) {
        self.finish(input, InputEnd::Complete, "").await;
        match next_event(events).await {
            run_event::Kind::Result(notice) => {
                assert_eq!(notice.state(), FinalTaskState::Complete)
            }
            other => panic!("expected the result, got {other:?}"),
        }
    }

    /// Each attempt of `task_id`: its number and outcome, oldest first.
    pub async fn outcomes(&self, task_id: &str) -> Vec<(u32, Option<AttemptOutcome>)> {
        let attempts = self.store.task_attempts(task_id).await.expect("attempts");
        attempts
            .into_iter()
            .map(|a| (a.attempt, a.outcome))
            .collect()
    }

    /// The task's row once it is in `final_state` (a row the dispatcher
    /// writes may not be there yet).
    pub async fn row(&self, task_id: &str, final_state: FinalState) -> levers9_store::TaskRecord {
        self.row_in(task_id, final_state.into()).await
    }

    /// The task's row once it is in `state`.
    pub async fn row_in(&self, task_id: &str, state: StoredState) -> levers9_store::TaskRecord {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let row = self
                .store
                .get_task(&self.workspace, task_id)
                .await
                .expect("get");
            match row {
                Some(row) if row.state == state => return row,
                seen => assert!(
                    tokio::time::Instant::now() < deadline,
                    "task is {:?}, not {state:?}",
                    seen.map(|row| (row.state, row.message))
                ),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

pub async fn next_event(events: &mut BoxStream<'static, RunEvent>) -> run_event::Kind {
    tokio::time::timeout(WAIT, events.next())
        .await
        .expect("an event in time")
        .expect("the channel is open")
        .kind
        .expect("kind")
}
