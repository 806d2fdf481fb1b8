//! The one place where controlplane errors become gRPC statuses. Handlers
//! return [`ApiError`]; nothing else builds a `tonic::Status`.

use levers9_state::StateError;
use levers9_store::StoreError;
use tonic::{Code, Status};

/// An error a caller sees. Messages say what was wrong and what to do; they
/// never carry a token, a secret or a database detail.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No usable credentials.
    #[error("{0}")]
    Unauthenticated(String),
    /// Credentials are fine but may not do this.
    #[error("{0}")]
    PermissionDenied(String),
    /// The request itself is malformed.
    #[error("{0}")]
    InvalidArgument(String),
    /// Nothing with that id in the caller's workspace.
    #[error("{0}")]
    NotFound(String),
    /// The system is not in a state that allows the call.
    #[error("{0}")]
    FailedPrecondition(String),
    /// A limit of the caller's (entries of a dict, items of a queue) is reached.
    #[error("{0}")]
    ResourceExhausted(String),
    /// A record the controlplane wrote cannot be read back.
    #[error("corrupt record: {0}")]
    Corrupt(String),
    /// The durable records failed.
    #[error("record store: {0}")]
    Store(#[from] StoreError),
    /// The hot state failed.
    #[error("hot state: {0}")]
    State(#[from] StateError),
    /// A local resource (object storage on disk) failed.
    #[error("{0}")]
    Unavailable(String),
    /// A call ran past its time.
    #[error("{0}")]
    DeadlineExceeded(String),
    /// The caller went away before the call was done.
    #[error("{0}")]
    Cancelled(String),
    /// Something the call relied on ended under it (an event channel); the
    /// caller may call again. The message carries no backend detail.
    #[error("{0}")]
    Interrupted(String),
    /// The caller's own function failed; the message is its exception as
    /// Python prints its last line (`ValueError: ...`).
    #[error("{0}")]
    FunctionFailed(String),
}

impl From<ApiError> for Status {
    fn from(error: ApiError) -> Self {
        match error {
            ApiError::Unauthenticated(m) => Status::unauthenticated(m),
            ApiError::PermissionDenied(m) => Status::permission_denied(m),
            ApiError::InvalidArgument(m) => Status::invalid_argument(m),
            ApiError::NotFound(m) => Status::not_found(m),
            ApiError::FailedPrecondition(m) => Status::failed_precondition(m),
            ApiError::DeadlineExceeded(m) => Status::deadline_exceeded(m),
            ApiError::Cancelled(m) => Status::cancelled(m),
            ApiError::Interrupted(m) => Status::unavailable(m),
            ApiError::FunctionFailed(m) => Status::unknown(m),
            ApiError::ResourceExhausted(m) => Status::resource_exhausted(m),
            ApiError::Store(StoreError::AlreadyExists(m)) => Status::already_exists(m),
            ApiError::Corrupt(detail) => {
                tracing::error!(%detail, "a stored record is unreadable");
                Status::internal("a stored record is unreadable; the controlplane log has details")
            }
            // Store and state details stay in the log: they can name hosts and
            // queries, and the caller can do nothing with them but retry.
            ApiError::Store(e) => {
                tracing::error!(error = %e, "record store call failed");
                Status::new(
                    Code::Unavailable,
                    "the controlplane could not reach its database; try again shortly",
                )
            }
            ApiError::Unavailable(detail) => {
                tracing::error!(%detail, "a controlplane resource failed");
                Status::unavailable(
                    "the controlplane could not store or read data; try again shortly",
                )
            }
            ApiError::State(e) => {
                tracing::error!(error = %e, "hot state call failed");
                Status::new(
                    Code::Unavailable,
                    "the controlplane could not reach its hot state; try again shortly",
                )
            }
        }
    }
}

impl From<levers9_volumes::VolumeError> for ApiError {
    fn from(error: levers9_volumes::VolumeError) -> Self {
        use levers9_volumes::VolumeError as E;
        match error {
            E::InvalidName(_) => ApiError::InvalidArgument(error.to_string()),
            E::NotFound(_) => ApiError::NotFound(error.to_string()),
            E::AlreadyExists(_) => ApiError::FailedPrecondition(error.to_string()),
            // Already free of secrets; the caller can act on a mount that
            // fails (it names the cause), unlike on a database error.
            E::Spawn { .. } | E::JuiceFs { .. } | E::NotMounted(_) => {
                ApiError::FailedPrecondition(format!("volumes are unavailable: {error}"))
            }
            E::WorkspaceStorage { .. } | E::NoWorkspaceMeta => {
                ApiError::FailedPrecondition(error.to_string())
            }
            E::Io { ref source, .. } if source.kind() == std::io::ErrorKind::InvalidInput => {
                ApiError::InvalidArgument(error.to_string())
            }
            E::Io { ref source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                ApiError::NotFound(error.to_string())
            }
            E::Io { .. } => ApiError::Unavailable(error.to_string()),
        }
    }
}

/// A domain error reaches the wire through its [`ApiError`], so handlers that
/// return `Status` can use `?` on it too; the mapping stays the one above.
macro_rules! status_through_api_error {
    ($($domain:ty),* $(,)?) => {$(
        impl From<$domain> for Status {
            fn from(error: $domain) -> Self {
                ApiError::from(error).into()
            }
        }
    )*};
}

status_through_api_error!(
    crate::fleet::FleetError,
    crate::functions::FunctionError,
    crate::images::ImageServiceError,
    crate::machines::MachineError,
);

impl From<crate::machines::MachineError> for ApiError {
    fn from(error: crate::machines::MachineError) -> Self {
        use crate::machines::MachineError as E;
        match error {
            E::InvalidPoolName(_) | E::JoinTtlTooLong { .. } => {
                ApiError::InvalidArgument(error.to_string())
            }
            E::OtherWorker { .. } | E::OtherPool { .. } => {
                ApiError::PermissionDenied(error.to_string())
            }
            E::Store(e) => ApiError::Store(e),
        }
    }
}

impl From<crate::fleet::FleetError> for ApiError {
    fn from(error: crate::fleet::FleetError) -> Self {
        use crate::fleet::FleetError as E;
        match error {
            E::UnknownPool(_)
            | E::GpuCountWithoutType
            | E::InvalidGpuTypes
            | E::NoRegister
            | E::StreamBroke(_)
            | E::NotRegisterFirst
            | E::IncompleteRegister
            | E::RegisterAgain => ApiError::InvalidArgument(error.to_string()),
            E::WorkerIdTaken(_) | E::WrongRuntime { .. } => {
                ApiError::FailedPrecondition(error.to_string())
            }
            E::CorruptRecord { what, source } => ApiError::Corrupt(format!("{what}: {source}")),
            E::Machine(e) => e.into(),
            E::Store(e) => ApiError::Store(e),
            E::State(e) => ApiError::State(e),
        }
    }
}

impl From<crate::functions::FunctionError> for ApiError {
    fn from(error: crate::functions::FunctionError) -> Self {
        use crate::functions::FunctionError as E;
        match error {
            E::OverLimit { .. }
            | E::ClassParametersTooLarge(_)
            | E::InvalidEnvName(_)
            | E::SecurityEnvCannotTighten { .. }
            | E::ReservedEnvName(_)
            | E::InvalidMountPath { .. }
            | E::MountPathTwice(_)
            | E::InvalidDigest(_)
            | E::ObjectTooLarge(_)
            | E::DigestMismatch { .. } => ApiError::InvalidArgument(error.to_string()),
            E::ObjectNotFound(_) => ApiError::NotFound(error.to_string()),
            E::CorruptStubConfig { stub_id, source } => {
                ApiError::Corrupt(format!("the configuration of stub {stub_id}: {source}"))
            }
            E::CorruptInput(task_id) => {
                ApiError::Corrupt(format!("the stored input of task {task_id}"))
            }
            E::CorruptResult(task_id) => {
                ApiError::Corrupt(format!("the stored result of task {task_id}"))
            }
            E::CorruptReplyName(reply) => ApiError::Corrupt(format!("the reply name {reply:?}")),
            E::RepliesNotFollowed | E::EndNotRecorded { .. } | E::Stopping => {
                ApiError::Unavailable(error.to_string())
            }
            E::Objects(e) => e.into(),
            E::Volume(e) => e.into(),
            E::Fleet(e) => e.into(),
            E::Store(e) => ApiError::Store(e),
            E::State(e) => ApiError::State(e),
        }
    }
}

impl From<crate::functions::objects::ObjectStorageError> for ApiError {
    fn from(error: crate::functions::objects::ObjectStorageError) -> Self {
        // The detail goes to the log; the caller is told to try again.
        ApiError::Unavailable(error.to_string())
    }
}

impl From<crate::images::ImageServiceError> for ApiError {
    fn from(error: crate::images::ImageServiceError) -> Self {
        use crate::images::ImageServiceError as E;
        match error {
            E::InvalidSpec(_) | E::InvalidReference(_) | E::MissingBuildObject(_) => {
                ApiError::InvalidArgument(error.to_string())
            }
            E::ImageNotFound { .. } => ApiError::NotFound(error.to_string()),
            E::Credentials(_)
            | E::NoImageRegistry
            | E::BaseImageWithoutRegistry(_)
            | E::BaseImageMissing { .. }
            | E::NoBuildPool(_)
            | E::RegistryRefused { .. }
            | E::CredentialsRefused { .. }
            | E::DeletesDisabled(_) => ApiError::FailedPrecondition(error.to_string()),
            E::CorruptImage { id, source } => ApiError::Corrupt(format!("image {id}: {source}")),
            E::RegistryUnavailable { .. } => ApiError::Unavailable(error.to_string()),
            E::State(e) => ApiError::State(e),
            E::Fleet(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests;
