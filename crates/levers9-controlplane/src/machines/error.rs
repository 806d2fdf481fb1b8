//! What can go wrong with pools, join tokens and machine credentials.

use levers9_store::StoreError;

use super::MAX_JOIN_TTL_SECONDS;

/// An error of the machines domain; `crate::error` maps it to the wire.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    /// A pool name that cannot be a hot-state key or a file name.
    #[error(
        "pool name {0:?} must be 1 to 63 lower-case letters, digits or '-', not starting \
         with '-', e.g. gpu-l40s"
    )]
    InvalidPoolName(String),
    /// A join token asked to work longer than [`MAX_JOIN_TTL_SECONDS`].
    #[error(
        "a join token may work for at most {MAX_JOIN_TTL_SECONDS} seconds (7 days); \
         ask for less with --ttl"
    )]
    JoinTtlTooLong {
        /// The lifetime asked for, in seconds.
        requested: u32,
    },
    /// A machine's credential used to act as another worker.
    #[error(
        "this is the credential of machine {machine}: it may only act as worker {machine}, \
         not {worker:?}"
    )]
    OtherWorker {
        /// The machine whose credential it is.
        machine: String,
        /// The worker it tried to act as.
        worker: String,
    },
    /// A machine's worker registering in a pool other than its machine's.
    #[error("machine {machine} belongs to pool {own_pool}, not {pool:?}")]
    OtherPool {
        /// The machine whose credential it is.
        machine: String,
        /// The pool the machine joined.
        own_pool: String,
        /// The pool its worker asked for.
        pool: String,
    },
    /// The durable records failed.
    #[error("record store: {0}")]
    Store(#[from] StoreError),
}
