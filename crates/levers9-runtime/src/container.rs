//! A started container: its id, pid, output and (future) exit.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use levers9_ids::ContainerId;
use tokio::sync::watch;

use crate::error::RuntimeError;
use crate::logs::LogHandle;
use crate::Exit;

/// Highest signal number: exit codes 129..=128+SIGRTMAX are signal deaths.
const MAX_SIGNAL: i32 = 64;

/// Resolves to the container's [`Exit`]; cheap to clone, any number of
/// waiters.
#[derive(Debug, Clone)]
pub struct ExitWatch {
    id: ContainerId,
    rx: watch::Receiver<Option<Exit>>,
}

impl ExitWatch {
    pub(crate) fn new(id: &ContainerId) -> (watch::Sender<Option<Exit>>, Self) {
        let (tx, rx) = watch::channel(None);
        (tx, ExitWatch { id: id.clone(), rx })
    }

    /// Waits for the exit. It is reported after the container's runtime
    /// state, cgroups and bundle were removed.
    pub async fn wait(&self) -> Result<Exit, RuntimeError> {
        let mut rx = self.rx.clone();
        let exit = match rx.wait_for(Option::is_some).await {
            Ok(exit) => *exit,
            Err(_) => None,
        };
        exit.ok_or_else(|| RuntimeError::ExitLost(self.id.to_string()))
    }

    /// Whether this watches the exit `tx` reports.
    pub(crate) fn is_of(&self, tx: &watch::Sender<Option<Exit>>) -> bool {
        self.rx.same_channel(&tx.subscribe())
    }

    /// The exit, if it was reported already.
    pub fn get(&self) -> Option<Exit> {
        *self.rx.borrow()
    }
}

/// A started container. Dropping it neither stops nor forgets the container:
/// it runs on, and its exit is still cleaned up.
#[derive(Debug, Clone)]
pub struct Container {
    pub(crate) id: ContainerId,
    pub(crate) pid: u32,
    pub(crate) logs: LogHandle,
    pub(crate) exit: ExitWatch,
}

impl Container {
    /// The id it was started under ([`crate::ContainerSpec::id`]); the runtime
    /// and its cgroups know it by it.
    pub fn id(&self) -> &ContainerId {
        &self.id
    }

    /// Host pid of its init process (runc), or of the gVisor sandbox
    /// (runsc), as the runtime's `--pid-file` reports it.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its stdout and stderr: the last `log_buffer_bytes` kept
    /// ([`crate::RuntimeConfig`]) and a live feed.
    pub fn logs(&self) -> &LogHandle {
        &self.logs
    }

    /// A handle on its exit.
    pub fn exit(&self) -> ExitWatch {
        self.exit.clone()
    }

    /// Waits for its exit (see [`ExitWatch::wait`]).
    pub async fn wait(&self) -> Result<Exit, RuntimeError> {
        self.exit.wait().await
    }
}

/// The container's exit from the foreground runtime's exit status and the
/// memory cgroup's OOM kill counter.
pub(crate) fn classify(status: ExitStatus, oom_kills: u64) -> Exit {
    match (status.code(), status.signal()) {
        (Some(0), _) => Exit::Code(0),
        _ if oom_kills > 0 => Exit::OomKilled,
        // The runtime process itself was killed.
        (None, Some(signal)) => Exit::Signal(signal),
        (Some(code), _) if code > 128 && code <= 128 + MAX_SIGNAL => Exit::Signal(code - 128),
        (Some(code), _) => Exit::Code(code),
        (None, None) => Exit::Code(-1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    #[test]
    fn exits_are_classified() {
        assert_eq!(classify(status(0), 1), Exit::Code(0));
        assert_eq!(classify(status(7), 0), Exit::Code(7));
        assert_eq!(classify(status(137), 0), Exit::Signal(9));
        assert_eq!(classify(status(137), 1), Exit::OomKilled);
        assert_eq!(classify(status(1), 1), Exit::OomKilled);
        assert_eq!(classify(ExitStatus::from_raw(15), 0), Exit::Signal(15));
    }

    #[tokio::test]
    async fn exit_watch_reports_and_loses() {
        let (tx, watch) = ExitWatch::new(&ContainerId::parse("c").unwrap());
        assert_eq!(watch.get(), None);
        tx.send_replace(Some(Exit::Code(3)));
        assert_eq!(watch.wait().await.ok(), Some(Exit::Code(3)));
        let (tx, watch) = ExitWatch::new(&ContainerId::parse("d").unwrap());
        drop(tx);
        assert!(matches!(watch.wait().await, Err(RuntimeError::ExitLost(_))));
    }
}
