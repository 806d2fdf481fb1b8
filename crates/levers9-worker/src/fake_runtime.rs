//! A stand-in for runc and runsc in unit tests, which need neither root
//! nor cgroups: it runs nothing, records every call, and lets the test say
//! what each container writes, when it exits and how, and which start
//! fails. Its containers are real [`Container`]s fed by a
//! [`ContainerFeed`].

use std::collections::HashMap;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use levers9_ids::ContainerId;
use levers9_runtime::{
    Capabilities, Container, ContainerFeed, ContainerSpec, ExecProcess, ExecSpec, Exit, Runtime,
    RuntimeError, Stream, Usage,
};
use levers9_sync::Lock;

/// How a container of the fake ends when stopped: as a process without a
/// SIGTERM handler does.
pub const STOPPED: Exit = Exit::Signal(15);
/// How a running container of the fake ends when cleaned up (killed).
pub const KILLED: Exit = Exit::Signal(9);

/// One call the fake was given, in the order it came.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    /// [`Runtime::start`], with the spec it was given.
    Start(Box<ContainerSpec>),
    /// [`Runtime::stop`].
    Stop {
        /// The id given to [`Runtime::stop`].
        id: String,
        /// Its grace between SIGTERM and SIGKILL.
        grace: Duration,
    },
    /// [`Runtime::cleanup`].
    Cleanup(String),
    /// [`Runtime::reap_leftovers`].
    ReapLeftovers,
    /// [`Runtime::usage`].
    Usage(String),
    /// [`Runtime::exec`], with the command's arguments.
    Exec(String, Vec<String>),
}

#[derive(Default)]
struct State {
    calls: Vec<Call>,
    /// The containers started and not yet ended (asked by the ids' text,
    /// as tests name them).
    running: HashMap<ContainerId, ContainerFeed>,
    /// Starts to refuse, by container id: the runtime's stderr.
    failing_starts: HashMap<String, String>,
    next_pid: u32,
}

/// A container id a test names.
pub fn id(id: &str) -> ContainerId {
    ContainerId::parse(id).expect("a valid container id")
}

/// See the module docs.
#[derive(Default)]
pub struct FakeRuntime {
    state: Lock<State>,
}

impl FakeRuntime {
    /// The next start of `id` fails as a runtime that exited early does,
    /// with `stderr` as what it said.
    pub fn fail_start(&self, id: &str, stderr: &str) {
        self.state
            .lock()
            .failing_starts
            .insert(id.to_owned(), stderr.to_owned());
    }

    /// The running container `id` writes `data` on `stream`.
    pub fn output(&self, id: &str, stream: Stream, data: &[u8]) {
        match self.state.lock().running.get(id) {
            Some(feed) => feed.output(stream, data),
            None => panic!("container {id} is not running"),
        }
    }

    /// The running container `id` ends with `exit`.
    pub fn exit(&self, id: &str, exit: Exit) {
        self.take(id)
            .unwrap_or_else(|| panic!("container {id} is not running"))
            .exit(exit);
    }

    /// The running container `id` ends without its exit being known, as
    /// when the task watching it dies.
    pub fn lose(&self, id: &str) {
        drop(
            self.take(id)
                .unwrap_or_else(|| panic!("container {id} is not running")),
        );
    }

    /// Whether `id` was started and has not ended.
    pub fn is_running(&self, id: &str) -> bool {
        self.state.lock().running.contains_key(id)
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.state.lock().calls.clone()
    }

    /// The specs of the starts so far, in order.
    pub fn started(&self) -> Vec<ContainerSpec> {
        self.calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Start(spec) => Some(*spec),
                _ => None,
            })
            .collect()
    }

    /// The stops so far, in order: container and grace.
    pub fn stops(&self) -> Vec<(String, Duration)> {
        self.calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Stop { id, grace } => Some((id, grace)),
                _ => None,
            })
            .collect()
    }

    /// Waits until the calls satisfy `done`; fails saying `what` never
    /// came after 10 s.
    pub async fn until(&self, what: &str, done: impl Fn(&[Call]) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done(&self.state.lock().calls) {
            assert!(Instant::now() < deadline, "never came: {what}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn record(&self, call: Call) {
        self.state.lock().calls.push(call);
    }

    fn take(&self, id: &str) -> Option<ContainerFeed> {
        self.state.lock().running.remove(id)
    }
}

#[async_trait]
impl Runtime for FakeRuntime {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: "runc",
            sandboxed: false,
            supports_seccomp: true,
            detects_oom: true,
            memory_overhead_mib: 0,
            pids_overhead: 0,
            supports_netns_path: true,
        }
    }

    async fn start(&self, spec: &ContainerSpec) -> Result<Container, RuntimeError> {
        let mut state = self.state.lock();
        state.calls.push(Call::Start(Box::new(spec.clone())));
        if let Some(stderr) = state.failing_starts.remove(spec.id.as_str()) {
            return Err(RuntimeError::StartFailed {
                id: spec.id.to_string(),
                status: "exit status: 1".into(),
                stderr,
            });
        }
        if state.running.contains_key(&spec.id) {
            return Err(RuntimeError::AlreadyExists(spec.id.to_string()));
        }
        state.next_pid += 1;
        let (container, feed) = ContainerFeed::new(&spec.id, 1000 + state.next_pid);
        state.running.insert(spec.id.clone(), feed);
        Ok(container)
    }

    async fn stop(&self, id: &ContainerId, grace: Duration) -> Result<(), RuntimeError> {
        self.record(Call::Stop {
            id: id.to_string(),
            grace,
        });
        // Not running is not an error (see the trait).
        if let Some(feed) = self.take(id.as_str()) {
            feed.exit(STOPPED);
        }
        Ok(())
    }

    async fn cleanup(&self, id: &ContainerId) -> Result<(), RuntimeError> {
        self.record(Call::Cleanup(id.to_string()));
        if let Some(feed) = self.take(id.as_str()) {
            feed.exit(KILLED);
        }
        Ok(())
    }

    async fn reap_leftovers(&self) -> Result<Vec<ContainerId>, RuntimeError> {
        self.record(Call::ReapLeftovers);
        Ok(Vec::new())
    }

    async fn usage(&self, id: &ContainerId) -> Result<Usage, RuntimeError> {
        self.record(Call::Usage(id.to_string()));
        if self.is_running(id.as_str()) {
            Ok(Usage::default())
        } else {
            Err(RuntimeError::NotFound(id.to_string()))
        }
    }

    /// Runs no command: a process needs a real runtime. Refused as for a
    /// container that is not running, which callers handle.
    async fn exec(&self, id: &ContainerId, spec: &ExecSpec) -> Result<ExecProcess, RuntimeError> {
        self.record(Call::Exec(id.to_string(), spec.args.clone()));
        Err(RuntimeError::NotRunning(id.to_string()))
    }
}
