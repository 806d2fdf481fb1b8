//! A [`Container`] that no runtime process backs: whoever holds its
//! [`ContainerFeed`] writes its output and reports its exit. It lets a
//! stand-in for runc or runsc, in the tests of code that drives a
//! [`Runtime`](crate::Runtime), hand out real `Container`s without root.

use std::time::SystemTime;

use tokio::sync::watch;

use crate::container::{Container, ExitWatch};
use crate::logs::{LogChunk, LogHandle, Stream};
use crate::{ContainerId, Exit, DEFAULT_LOG_BUFFER_BYTES};

/// The other end of a [`Container`] made by [`ContainerFeed::new`].
/// Dropping it without [`ContainerFeed::exit`] ends the output and loses
/// the exit, as when the task that watches a real container ends:
/// [`Container::wait`] answers [`RuntimeError::ExitLost`](crate::RuntimeError::ExitLost).
#[derive(Debug)]
pub struct ContainerFeed {
    logs: LogHandle,
    exit: watch::Sender<Option<Exit>>,
}

impl ContainerFeed {
    /// A running container `id` whose process is `pid`, and its feed. It
    /// keeps as much output as a runtime of [`RuntimeConfig::new`](crate::RuntimeConfig::new)
    /// would.
    pub fn new(id: &ContainerId, pid: u32) -> (Container, ContainerFeed) {
        let logs = LogHandle::new(DEFAULT_LOG_BUFFER_BYTES);
        let (exit, watch) = ExitWatch::new(id);
        let container = Container {
            id: id.clone(),
            pid,
            logs: logs.clone(),
            exit: watch,
        };
        (container, ContainerFeed { logs, exit })
    }

    /// Adds `data` to the container's output on `stream`, as one chunk.
    pub fn output(&self, stream: Stream, data: &[u8]) {
        self.logs.push(LogChunk {
            stream,
            at: SystemTime::now(),
            data: data.to_vec(),
        });
    }

    /// Ends the container: its output first, then its exit, in the order a
    /// runtime reports them.
    pub fn exit(self, exit: Exit) {
        self.logs.end();
        self.exit.send_replace(Some(exit));
    }
}

impl Drop for ContainerFeed {
    fn drop(&mut self) {
        self.logs.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RuntimeError;

    #[tokio::test]
    async fn a_fed_container_shows_its_output_then_its_exit() {
        let (container, feed) = ContainerFeed::new(&ContainerId::parse("c1").unwrap(), 42);
        assert_eq!((container.id().as_str(), container.pid()), ("c1", 42));
        let (_, mut live) = container.logs().subscribe();
        feed.output(Stream::Stdout, b"hello\n");
        feed.exit(Exit::Code(3));
        assert_eq!(live.recv().await.unwrap().data, b"hello\n");
        assert!(live.recv().await.is_err(), "the output ended");
        assert_eq!(container.wait().await.unwrap(), Exit::Code(3));
    }

    #[tokio::test]
    async fn a_dropped_feed_loses_the_exit_and_ends_the_output() {
        let (container, feed) = ContainerFeed::new(&ContainerId::parse("c1").unwrap(), 42);
        drop(feed);
        assert!(container.logs().is_finished());
        assert!(matches!(
            container.wait().await,
            Err(RuntimeError::ExitLost(id)) if id == "c1"
        ));
    }
}
