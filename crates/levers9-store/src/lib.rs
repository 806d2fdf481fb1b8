//! The durable records of levers9 behind five traits — [`RecordStore`] (workspaces and
//! tokens), [`SealedStore`] (values sealed at rest), [`FunctionStore`] (uploaded
//! objects, stubs, deployed apps, their schedules and tasks), [`LogStore`] (what tasks
//! printed) and [`MachineStore`] (pools and machines) — with a Postgres backend for
//! production and an embedded SQLite backend for single-machine installs.
#![forbid(unsafe_code)]

mod backend;
mod endpoint_model;
mod error;
mod function_model;
mod function_sql;
mod functions;
mod log_model;
mod logs;
mod machines;
mod model;
mod postgres;
mod records;
mod schedule_model;
mod sealed;
mod sql;
mod sqlite;
mod task_state;

pub use endpoint_model::{EndpointKind, EndpointRecord, NewEndpoint};
pub use error::StoreError;
pub use function_model::{
    AttemptRecord, DeploymentRecord, NewDeployment, NewTask, StubRecord, TaskEnd, TaskMoves,
    TaskRecord, TaskRetry, TaskStart, TasksMoved,
};
pub use functions::FunctionStore;
pub use log_model::{Appended, LogQuery, LogRecord, NewLogChunk, TRUNCATED_STREAM};
pub use logs::LogStore;
pub use machines::{
    JoinOutcome, JoinRedemption, MachineRecord, MachineState, MachineStore, NewMachine, PoolRecord,
};
pub use model::{NewToken, NewWorkspace, TokenRecord, TokenType, UnknownTokenType, Workspace};
pub use postgres::{PostgresSettings, PostgresStore};
pub use schedule_model::{Fired, NewSchedule, ScheduleFire, ScheduleRecord};
pub use sealed::{SealedId, SealedInfo, SealedKind, SealedStore, SealedValue};
pub use sqlite::SqliteStore;
pub use task_state::{AttemptOutcome, FinalState, TaskState, UnknownState};

use chrono::{DateTime, Utc};

/// The durable records of levers9, whichever database holds them.
#[async_trait::async_trait]
pub trait RecordStore: Send + Sync + 'static {
    /// "postgres" or "sqlite", for the start-up log.
    fn backend(&self) -> &'static str;

    /// A cheap round trip, for readiness checks.
    async fn ping(&self) -> Result<(), StoreError>;

    /// Creates the first workspace and its first token, atomically, only if the install has
    /// no workspace yet; None when one exists or a concurrent caller won the race.
    async fn bootstrap_first_workspace(
        &self,
        workspace: NewWorkspace,
        token: NewToken,
    ) -> Result<Option<Workspace>, StoreError>;

    /// Whether any workspace exists.
    async fn has_workspace(&self) -> Result<bool, StoreError>;

    /// Creates a workspace with its first token; AlreadyExists if the name is taken.
    async fn create_workspace(
        &self,
        workspace: NewWorkspace,
        token: NewToken,
    ) -> Result<Workspace, StoreError>;

    /// A workspace by id.
    async fn get_workspace(&self, id: &str) -> Result<Option<Workspace>, StoreError>;

    /// The oldest workspace (the one bootstrap made), None before bootstrap:
    /// where credentials the controlplane mints for itself belong.
    async fn first_workspace(&self) -> Result<Option<Workspace>, StoreError>;

    /// Stores a new token (its hash).
    async fn insert_token(&self, token: NewToken) -> Result<TokenRecord, StoreError>;

    /// The token with this hash and its workspace, revoked ones included (the caller decides).
    async fn find_token_by_hash(
        &self,
        hash: &[u8],
    ) -> Result<Option<(TokenRecord, Workspace)>, StoreError>;

    /// The tokens of one workspace, oldest first.
    async fn list_tokens(&self, workspace_id: &str) -> Result<Vec<TokenRecord>, StoreError>;

    /// Revokes a token of this workspace, keeping the first revocation time if revoked twice;
    /// None if the workspace has no such token (another workspace's token looks missing).
    async fn revoke_token(
        &self,
        workspace_id: &str,
        token_id: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<TokenRecord>, StoreError>;

    /// Records that a token was used at this time.
    async fn touch_token(&self, token_id: &str, at: DateTime<Utc>) -> Result<(), StoreError>;
}
