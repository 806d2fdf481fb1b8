//! The protocol against a fake runner: a Rust client speaking the frames a
//! Python runner would.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use levers9_api::v1::{worker_message, TaskInput, TaskResult, TaskResultState, WorkerMessage};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use levers9_config::ContainerServerAuthMode;

use super::{wire, BindError, Connection, ContainerServer, InitError, ServerAuth};
use crate::fake_runtime::id;
use crate::security::{Check, SecurityMetrics, Subject};
use crate::test_log::LogCapture;

const ID: &str = "c-1";
const WAIT: Duration = Duration::from_secs(5);

struct Fixture {
    _dir: tempfile::TempDir,
    server: ContainerServer,
    events: mpsc::Receiver<WorkerMessage>,
    stops: mpsc::UnboundedReceiver<()>,
}

fn auth(mode: ContainerServerAuthMode, metrics: &SecurityMetrics) -> ServerAuth {
    let subject = Subject {
        container_id: Some(id(ID)),
        stub_id: "stub-1".into(),
        pool: "pool-1".into(),
    };
    ServerAuth::new(mode, subject, metrics.clone())
}

fn fixture() -> Fixture {
    fixture_with(auth(
        ContainerServerAuthMode::Off,
        &SecurityMetrics::default(),
    ))
}

fn fixture_with(auth: ServerAuth) -> Fixture {
    fixture_of(auth, 1)
}

/// A server whose runner runs `concurrency` inputs at once.
fn fixture_of(auth: ServerAuth, concurrency: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let (events_tx, events) = mpsc::channel(64);
    let (stops_tx, stops) = mpsc::unbounded_channel();
    let stop = Arc::new(move || {
        let _ = stops_tx.send(());
    });
    let server = ContainerServer::bind(
        &dir.path().join("run"),
        dir.path(),
        &id(ID),
        events_tx,
        stop,
        auth,
        concurrency,
    )
    .unwrap();
    Fixture {
        _dir: dir,
        server,
        events,
        stops,
    }
}

impl Fixture {
    async fn connect(&self) -> UnixStream {
        UnixStream::connect(self.server.dir().join(super::SOCKET_NAME))
            .await
            .unwrap()
    }

    async fn next_event(&mut self) -> worker_message::Kind {
        tokio::time::timeout(WAIT, self.events.recv())
            .await
            .expect("an event within 5 s")
            .expect("the events channel is open")
            .kind
            .unwrap()
    }

    async fn next_result(&mut self) -> TaskResult {
        match self.next_event().await {
            worker_message::Kind::TaskResult(result) => result,
            other => panic!("expected a task result, got {other:?}"),
        }
    }

    /// Connects and says hello, and checks RunnerReady was reported.
    async fn ready_runner(&mut self) -> UnixStream {
        self.ready_runner_saying(json!({"type": "hello", "container_id": ID}))
            .await
    }

    /// Connects and says `hello`, and checks RunnerReady was reported.
    async fn ready_runner_saying(&mut self, hello: Value) -> UnixStream {
        let mut runner = self.connect().await;
        send(&mut runner, hello, b"").await;
        match self.next_event().await {
            worker_message::Kind::RunnerReady(ready) => assert_eq!(ready.container_id, ID),
            other => panic!("expected RunnerReady, got {other:?}"),
        }
        runner
    }
}

async fn send(runner: &mut UnixStream, header: Value, body: &[u8]) {
    runner
        .write_all(&wire::encode(&header, body))
        .await
        .unwrap();
}

/// The next frame the worker sent to the runner.
async fn receive(runner: &mut UnixStream) -> (Value, Vec<u8>) {
    tokio::time::timeout(WAIT, async {
        let header_len = runner.read_u32().await.unwrap();
        let mut header = vec![0; header_len as usize];
        runner.read_exact(&mut header).await.unwrap();
        let body_len = runner.read_u32().await.unwrap();
        let mut body = vec![0; body_len as usize];
        runner.read_exact(&mut body).await.unwrap();
        (serde_json::from_slice(&header).unwrap(), body)
    })
    .await
    .expect("a frame within 5 s")
}

/// Whether the worker closed the connection (reads end).
async fn closed(runner: &mut UnixStream) -> bool {
    let mut byte = [0; 1];
    matches!(
        tokio::time::timeout(WAIT, runner.read(&mut byte)).await,
        Ok(Ok(0) | Err(_))
    )
}

/// Waits until `holds` (checked every 10 ms), failing after [`WAIT`].
async fn until(what: &str, holds: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !holds() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn input(task_id: &str, payload: &[u8], timeout_ms: u64) -> TaskInput {
    TaskInput {
        container_id: ID.into(),
        task_id: task_id.into(),
        payload: payload.to_vec(),
        timeout_ms,
        attempt: 1,
    }
}

#[tokio::test]
async fn hello_is_reported_as_runner_ready() {
    let mut f = fixture();
    f.ready_runner().await;
    assert!(f.server.outcome().said_hello);
}

#[tokio::test]
async fn an_input_is_delivered_and_its_output_and_result_reported() {
    let mut f = fixture();
    let mut runner = f.ready_runner().await;

    f.server.send_input(input("t1", b"args-pickle", 0));
    let (header, body) = receive(&mut runner).await;
    assert_eq!(
        header,
        json!({"type": "input", "task_id": "t1", "attempt": 1})
    );
    assert_eq!(body, b"args-pickle");

    send(
        &mut runner,
        json!({"type": "output", "task_id": "t1", "stream": "stderr"}),
        b"warning\n",
    )
    .await;
    match f.next_event().await {
        worker_message::Kind::TaskOutput(output) => {
            assert_eq!(
                (output.container_id.as_str(), output.task_id.as_str()),
                (ID, "t1")
            );
            assert_eq!(
                (output.stream.as_str(), output.data.as_slice()),
                ("stderr", &b"warning\n"[..])
            );
        }
        other => panic!("expected output, got {other:?}"),
    }
    send(
        &mut runner,
        json!({"type": "result", "task_id": "t1", "state": "error", "message": "ValueError: no", "traceback": "Traceback…"}),
        b"exc-pickle",
    )
    .await;
    let result = f.next_result().await;
    assert_eq!(
        result,
        TaskResult {
            container_id: ID.into(),
            task_id: "t1".into(),
            state: TaskResultState::Error.into(),
            payload: b"exc-pickle".to_vec(),
            traceback: "Traceback…".into(),
            message: "ValueError: no".into(),
        }
    );
}

#[tokio::test]
async fn inputs_that_come_before_hello_are_delivered_after_it() {
    let mut f = fixture();
    f.server.send_input(input("early", b"1", 0));
    let mut runner = f.connect().await;
    until("the server takes the connection", || {
        matches!(
            f.server.shared.state().connection,
            Connection::Open { ready: false, .. }
        )
    })
    .await;
    // Connected, not yet ready: still queued.
    f.server.send_input(input("connected", b"2", 0));
    send(
        &mut runner,
        json!({"type": "hello", "container_id": ID}),
        b"",
    )
    .await;

    let (first, body) = receive(&mut runner).await;
    assert_eq!(
        (first["task_id"].as_str(), body.as_slice()),
        (Some("early"), &b"1"[..])
    );
    let (second, _) = receive(&mut runner).await;
    assert_eq!(second["task_id"], "connected");
    assert!(matches!(
        f.next_event().await,
        worker_message::Kind::RunnerReady(_)
    ));
}

#[tokio::test]
async fn an_input_past_its_timeout_is_reported_and_its_container_stopped() {
    let mut f = fixture();
    let mut runner = f.ready_runner().await;
    f.server.send_input(input("slow", b"", 1500));
    receive(&mut runner).await;

    let result = f.next_result().await;
    assert_eq!(
        (result.task_id.as_str(), result.state()),
        ("slow", TaskResultState::Timeout)
    );
    assert_eq!(
        result.message,
        "timed out after 1.5 s (the function's timeout)"
    );
    tokio::time::timeout(WAIT, f.stops.recv())
        .await
        .unwrap()
        .unwrap();

    // A result that comes after the timeout is not reported again.
    send(
        &mut runner,
        json!({"type": "result", "task_id": "slow", "state": "complete"}),
        b"",
    )
    .await;
    f.server.send_input(input("next", b"", 0));
    receive(&mut runner).await;
    send(
        &mut runner,
        json!({"type": "result", "task_id": "next", "state": "complete"}),
        b"",
    )
    .await;
    assert_eq!(f.next_result().await.task_id, "next");
}

#[tokio::test]
async fn a_result_in_time_cancels_the_timeout() {
    let mut f = fixture();
    let mut runner = f.ready_runner().await;
    f.server.send_input(input("quick", b"", 200));
    receive(&mut runner).await;
    send(
        &mut runner,
        json!({"type": "result", "task_id": "quick", "state": "complete"}),
        b"42",
    )
    .await;
    assert_eq!(f.next_result().await.state(), TaskResultState::Complete);

    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(f.stops.try_recv().is_err(), "the container was stopped");
    assert!(f.events.try_recv().is_err(), "something more was reported");
}

#[tokio::test]
async fn a_second_connection_is_refused() {
    let mut f = fixture();
    let mut first = f.ready_runner().await;
    let mut second = f.connect().await;
    send(
        &mut second,
        json!({"type": "hello", "container_id": ID}),
        b"",
    )
    .await;
    assert!(closed(&mut second).await);

    // The first runner still gets inputs.
    f.server.send_input(input("t", b"", 0));
    assert_eq!(receive(&mut first).await.0["task_id"], "t");
}

#[tokio::test]
async fn a_malformed_frame_closes_the_connection_and_later_inputs_are_lost() {
    let mut f = fixture();
    let mut runner = f.ready_runner().await;
    let garbage = b"not json";
    runner
        .write_all(&(garbage.len() as u32).to_be_bytes())
        .await
        .unwrap();
    runner.write_all(garbage).await.unwrap();
    assert!(closed(&mut runner).await);

    f.server.send_input(input("after", b"", 0));
    let result = f.next_result().await;
    assert_eq!(
        (result.task_id.as_str(), result.state()),
        ("after", TaskResultState::Lost)
    );
    assert!(
        result
            .message
            .contains("the function runner sent a bad message"),
        "{}",
        result.message
    );
}

#[tokio::test]
async fn a_hello_from_another_container_is_refused() {
    let f = fixture();
    let mut runner = f.connect().await;
    send(
        &mut runner,
        json!({"type": "hello", "container_id": "someone-else"}),
        b"",
    )
    .await;
    assert!(closed(&mut runner).await);
    assert!(!f.server.outcome().said_hello);
}

#[tokio::test]
async fn an_init_error_is_kept_for_the_exit_event() {
    let f = fixture();
    let mut runner = f.connect().await;
    send(
        &mut runner,
        json!({"type": "init_error", "message": "ModuleNotFoundError: No module named 'numpy'", "traceback": "Traceback…"}),
        b"",
    )
    .await;
    drop(runner);
    // The server reads it on a task of its own, which shutting down stops.
    until("the init error is read", || {
        f.server.outcome().init_error.is_some()
    })
    .await;
    let outcome = f.server.shut_down().await;
    assert!(!outcome.said_hello);
    assert_eq!(
        outcome.init_error,
        Some(InitError {
            message: "ModuleNotFoundError: No module named 'numpy'".into(),
            traceback: "Traceback…".into(),
        })
    );
}

#[tokio::test]
async fn inputs_never_delivered_are_reported_lost_at_shutdown() {
    let mut f = fixture();
    f.server.send_input(input("queued", b"", 0));
    f.server.shut_down().await;
    let result = f.next_result().await;
    assert_eq!(
        (result.task_id.as_str(), result.state()),
        ("queued", TaskResultState::Lost)
    );
    assert_eq!(
        result.message,
        "the input never ran in container c-1: its container has ended"
    );
}

#[tokio::test]
async fn a_socket_path_too_long_names_the_state_dir() {
    let state_dir = Path::new("/var/lib").join("x".repeat(100));
    let (events, _) = mpsc::channel(1);
    let error = ContainerServer::bind(
        &state_dir.join("run"),
        &state_dir,
        &id(ID),
        events,
        Arc::new(|| {}),
        auth(ContainerServerAuthMode::Off, &SecurityMetrics::default()),
        1,
    )
    .err()
    .unwrap();
    assert!(matches!(error, BindError::PathTooLong { .. }));
    let text = error.to_string();
    assert!(
        text.contains("shorter state directory than /var/lib/xxx"),
        "{text}"
    );
}

#[tokio::test]
async fn inputs_waiting_for_a_hello_are_lost_when_the_runner_leaves() {
    let mut f = fixture();
    let runner = f.connect().await;
    f.server.send_input(input("waiting", b"", 0));
    drop(runner);
    let result = f.next_result().await;
    assert_eq!(
        (result.task_id.as_str(), result.state()),
        ("waiting", TaskResultState::Lost)
    );
    assert_eq!(
        result.message,
        "the input never ran in container c-1: the function runner has disconnected"
    );
}

#[tokio::test]
async fn enforce_refuses_a_runner_without_the_credential() {
    let metrics = SecurityMetrics::default();
    let mut f = fixture_with(auth(ContainerServerAuthMode::Enforce, &metrics));
    let (name, credential) = f.server.credential_env().expect("a credential is issued");
    assert_eq!(name, "LEVERS9_CONTAINER_SERVER_CREDENTIAL");

    let mut runner = f.connect().await;
    send(
        &mut runner,
        json!({"type": "hello", "container_id": ID}),
        b"",
    )
    .await;
    assert!(closed(&mut runner).await, "the connection is closed");
    assert!(!f.server.outcome().said_hello);
    assert_eq!(
        metrics.count(Check::ContainerServerAuth, "enforce", "pool-1"),
        1
    );
    f.server.send_input(input("t1", b"", 0));
    let lost = f.next_result().await;
    assert_eq!(
        lost.state(),
        TaskResultState::Lost,
        "nothing reaches an unproven runner"
    );
    drop(f);

    let mut f = fixture_with(auth(ContainerServerAuthMode::Enforce, &metrics));
    let (_, credential_2) = f.server.credential_env().expect("issued");
    assert_ne!(credential, credential_2);
    let mut runner = f.connect().await;
    send(
        &mut runner,
        json!({"type": "hello", "container_id": ID, "credential": credential_2}),
        b"",
    )
    .await;
    match f.next_event().await {
        worker_message::Kind::RunnerReady(ready) => assert_eq!(ready.container_id, ID),
        other => panic!("expected RunnerReady, got {other:?}"),
    }
}

#[tokio::test]
async fn observe_logs_a_runner_without_the_credential_and_serves_it() {
    let log = LogCapture::start();
    let metrics = SecurityMetrics::default();
    let mut f = fixture_with(auth(ContainerServerAuthMode::Observe, &metrics));
    assert!(
        f.server.credential_env().is_some(),
        "observe issues one too"
    );
    f.ready_runner().await;
    assert!(f.server.outcome().said_hello);
    assert_eq!(
        metrics.count(Check::ContainerServerAuth, "observe", "pool-1"),
        1
    );
    let lines = log.lines_with("check=\"container_server_auth\"");
    assert_eq!(lines.len(), 1, "{}", log.text());
    assert!(lines[0].contains("mode=\"observe\""), "{}", lines[0]);
    assert!(
        lines[0].contains("container_id=c-1 stub_id=stub-1 pool=pool-1"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("hello without the container's credential"),
        "{}",
        lines[0]
    );
}

mod attach;
mod cancel;
mod items;
mod spare;
mod waiting;
