//! What can go wrong with the fleet: its records, its pools, GPU requests
//! and the opening of a worker's stream.

use levers9_state::StateError;
use levers9_store::StoreError;

use crate::machines::MachineError;

/// An error of the fleet domain; `crate::error` maps it to the wire.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A record the fleet wrote cannot be read back.
    #[error("corrupt record: {what}: {source}")]
    CorruptRecord {
        /// The record, e.g. `worker record`.
        what: String,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// Containers ask for a pool that nothing configured, made or joined.
    #[error(
        "unknown pool {0:?}: it is not in worker.pools and no worker has joined it; \
         start one with `levers9 worker --pool {0}`, make it with `levers9 pool \
         create {0}`, or pick another pool (levers9 worker list)"
    )]
    UnknownPool(String),
    /// A GPU count without the GPU types it may take.
    #[error("a GPU count needs a GPU type: name the types it accepts, e.g. H100")]
    GpuCountWithoutType,
    /// GPU types that are empty or too many.
    #[error("GPU types must be up to 8 non-empty names, e.g. H100")]
    InvalidGpuTypes,
    /// A worker's stream sent nothing in time to register.
    #[error("no Register within 10 s of opening the stream")]
    NoRegister,
    /// A worker's stream broke before it registered.
    #[error("the stream broke: {0}")]
    StreamBroke(String),
    /// A worker's stream opened with something else than Register.
    #[error("the first message on a worker stream must be Register")]
    NotRegisterFirst,
    /// A Register without the worker's id or pool.
    #[error("Register needs a worker_id and a pool")]
    IncompleteRegister,
    /// A second Register on a stream.
    #[error("Register may only open a stream")]
    RegisterAgain,
    /// A live worker of that id is connected with another token.
    #[error(
        "worker {0:?} is connected with another token: give this worker its own \
         --worker-id, or stop the other one first"
    )]
    WorkerIdTaken(String),
    /// A worker runs another runtime than its configured pool.
    #[error(
        "pool {pool} runs {wanted} (worker.pools.{pool}.runtime) but this worker runs \
         {runtime:?}: start it with --runtime {wanted}"
    )]
    WrongRuntime {
        /// The worker's pool.
        pool: String,
        /// The pool's runtime.
        wanted: String,
        /// The worker's.
        runtime: String,
    },
    /// The worker's credential may not register it (a machine's, for
    /// another worker or pool).
    #[error(transparent)]
    Machine(#[from] MachineError),
    /// The durable records (pools made at run time) failed.
    #[error("record store: {0}")]
    Store(#[from] StoreError),
    /// The hot state, where the fleet lives, failed.
    #[error("hot state: {0}")]
    State(#[from] StateError),
}
