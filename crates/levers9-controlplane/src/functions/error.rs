//! What can go wrong with functions: stub specs, objects, the tasks'
//! inputs, results and rows, and the callers' reply channels.

use levers9_state::StateError;
use levers9_store::StoreError;
use levers9_volumes::VolumeError;

use super::objects::{ObjectStorageError, MAX_OBJECT_BYTES};
use super::spec::MAX_CLASS_PARAMETERS_BYTES;
use crate::fleet::FleetError;

/// An error of the functions domain; `crate::error` maps it to the wire.
#[derive(Debug, thiserror::Error)]
pub enum FunctionError {
    /// A stub setting over its limit.
    #[error("{what} is {value}, more than the limit of {max}: {hint}")]
    OverLimit {
        /// The setting, e.g. `retries`.
        what: &'static str,
        /// As asked.
        value: u32,
        /// The most it may be.
        max: u32,
        /// What to do.
        hint: &'static str,
    },
    /// A class's pickled parameters over their limit.
    #[error(
        "the parameters of the class are {0} bytes pickled, more than \
         {MAX_CLASS_PARAMETERS_BYTES}: pass names or paths as parameters and load the data \
         in an @enter method"
    )]
    ClassParametersTooLarge(usize),
    /// An environment variable name a container cannot have.
    #[error("env name {0:?} is not a valid environment variable name")]
    InvalidEnvName(String),
    /// A security variable whose value would not tighten the pool's.
    #[error(
        "env {name}={value:?} cannot tighten the pool's container security, and a stub can \
         never loosen it: use {name}={allowed}, or leave {name} out"
    )]
    SecurityEnvCannotTighten {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
        /// The values it may take, `a or b`.
        allowed: String,
    },
    /// A `LEVERS9_*` name that is the worker's to set.
    #[error(
        "env name {0} is reserved: names starting with LEVERS9_ are set by the worker (a stub \
         may only set LEVERS9_SECURITY_PROFILE and LEVERS9_SECCOMP, to tighten its pool's \
         security)"
    )]
    ReservedEnvName(String),
    /// A volume mounted at a path that is not absolute, or is `/`.
    #[error("volume {volume:?} has mount_path {path:?}: use an absolute path such as /data")]
    InvalidMountPath {
        /// The volume.
        volume: String,
        /// Its mount path.
        path: String,
    },
    /// Two volumes at one path.
    #[error("two volumes are mounted at {0:?}: give each its own mount_path")]
    MountPathTwice(String),
    /// A stub's stored configuration cannot be read back.
    #[error("corrupt record: the configuration of stub {stub_id}: {source}")]
    CorruptStubConfig {
        /// The stub.
        stub_id: String,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// A task's stored input cannot be read back.
    #[error("corrupt record: the stored input of task {0}")]
    CorruptInput(String),
    /// A task's stored result cannot be read back.
    #[error("corrupt record: the stored result of task {0}")]
    CorruptResult(String),
    /// A reply name that names no replica.
    #[error("corrupt record: the reply name {0:?}")]
    CorruptReplyName(String),
    /// This replica does not follow its reply channel (yet).
    #[error("this controlplane cannot follow results in the hot state right now; try again")]
    RepliesNotFollowed,
    /// A task's end could not be written to its row.
    #[error("cannot record the end of task {task_id}: {detail}")]
    EndNotRecorded {
        /// The task.
        task_id: String,
        /// Why.
        detail: String,
    },
    /// The controlplane stopped before a task's end was written.
    #[error("the controlplane is stopping; the task's end was not recorded")]
    Stopping,
    /// Not `sha256:` and 64 lowercase hex digits.
    #[error("{0:?} is not a digest: expected sha256: and 64 lowercase hex digits")]
    InvalidDigest(String),
    /// An object over the size limit.
    #[error(
        "the object is {0} bytes, more than the limit of {MAX_OBJECT_BYTES}: add large files \
         to .levers9ignore and put data in a volume"
    )]
    ObjectTooLarge(usize),
    /// An object whose data is not what its digest says.
    #[error("the data's sha256 is {actual}, not the digest given ({digest}): upload again")]
    DigestMismatch {
        /// The data's.
        actual: String,
        /// As given.
        digest: String,
    },
    /// An object that was never stored.
    #[error("no object {0}: the caller uploads it before using it")]
    ObjectNotFound(String),
    /// The object storage failed.
    #[error(transparent)]
    Objects(#[from] ObjectStorageError),
    /// A volume name that is not one.
    #[error(transparent)]
    Volume(#[from] VolumeError),
    /// The fleet (a GPU request, a container, a worker's inbox) failed.
    #[error(transparent)]
    Fleet(#[from] FleetError),
    /// The durable records failed.
    #[error("record store: {0}")]
    Store(#[from] StoreError),
    /// The hot state failed.
    #[error("hot state: {0}")]
    State(#[from] StateError),
}
