//! The one error type of the crate: each variant says what failed and, for a
//! runtime command, carries the runtime's own (trimmed) stderr.

use std::time::Duration;

/// Why a runtime operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The spec or config cannot be run as given.
    #[error("invalid container spec: {0}")]
    InvalidSpec(String),
    /// A container with this id is already known (bundle exists).
    #[error("container {0} already exists")]
    AlreadyExists(String),
    /// No such container.
    #[error("container {0} not found")]
    NotFound(String),
    /// The container exists no more, or not yet: nothing runs to exec in.
    #[error("container {0} is not running")]
    NotRunning(String),
    /// A file-system operation of ours failed.
    #[error("{what}: {source}")]
    Io {
        /// What we were doing, with the path.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A runtime command exited unsuccessfully.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line as run, the binary and its arguments joined by
        /// spaces (for the message, not to run again).
        command: String,
        /// Its exit status as the OS words it, e.g. `exit status: 1`.
        status: String,
        /// Its stderr, trimmed; only the last 4 KiB (after a `…`) when longer.
        stderr: String,
    },
    /// A runtime command did not finish in time (it was killed).
    #[error("`{command}` timed out after {timeout:?}")]
    Timeout {
        /// The command line as run, or `stopping <id>` when a container
        /// outlived its stop.
        command: String,
        /// How long it was given: the command or start timeout of
        /// [`crate::RuntimeConfig`], or for a stop its grace plus the command
        /// timeout.
        timeout: Duration,
    },
    /// The runtime exited before the container's process existed.
    #[error("container {id} failed to start ({status}): {stderr}")]
    StartFailed {
        /// The id it was to start under ([`crate::ContainerSpec::id`]).
        id: String,
        /// The runtime's exit status.
        status: String,
        /// The runtime's trimmed stderr.
        stderr: String,
    },
    /// Building the OCI spec failed.
    #[error("building the OCI spec: {0}")]
    Spec(#[from] oci_spec::OciSpecError),
    /// The task watching the container ended without reporting its exit
    /// (the async runtime shut down).
    #[error("the exit of container {0} was lost")]
    ExitLost(String),
}

impl RuntimeError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        RuntimeError::Io {
            what: what.into(),
            source,
        }
    }
}

/// Keeps an error message readable: trims, and keeps only the last part of
/// very long output (where the runtime's fatal error is).
pub(crate) fn trim_output(bytes: &[u8]) -> String {
    const MAX: usize = 4096;
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.len() <= MAX {
        return text.to_string();
    }
    let mut start = text.len() - MAX;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}
