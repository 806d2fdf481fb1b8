//! The records of deployed functions and their runs, as the rest of levers9 sees them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::task_state::{AttemptOutcome, FinalState, TaskState};

/// A deployable function: which code, which SDK, which entry point, with what settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StubRecord {
    /// Derived by the controlplane from the stub's content, so a redeploy of the same
    /// code and settings finds the same stub.
    pub id: String,
    /// The workspace that owns it.
    pub workspace_id: String,
    /// The name the user deployed it under.
    pub name: String,
    /// Digest of the code archive (an object of the workspace).
    pub code_digest: String,
    /// Digest of the SDK archive the code runs with.
    pub sdk_digest: String,
    /// The Python module that holds the function, e.g. `app.handlers`.
    pub module_path: String,
    /// The function within that module.
    pub function_name: String,
    /// Settings as JSON; opaque here, the controlplane owns its shape.
    pub config_json: String,
    /// When it was first stored.
    pub created_at: DateTime<Utc>,
}

/// What a caller supplies to create a task; it starts pending with no attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewTask {
    /// Caller-made id (uuid v7 text).
    pub id: String,
    /// The workspace that owns it.
    pub workspace_id: String,
    /// The stub it runs (of the same workspace).
    pub stub_id: String,
    /// The function it calls, for listings without a join.
    pub function_name: String,
    /// When it was submitted.
    pub created_at: DateTime<Utc>,
}

/// An attempt of a task starting, for [`FunctionStore::move_tasks`](crate::FunctionStore::move_tasks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStart {
    /// Id of the task to start; a task already final is left as it is.
    pub task_id: String,
    /// Its attempt number (1 for the first).
    pub attempt: u32,
    /// Where the attempt runs.
    pub container_id: String,
    /// The container's worker.
    pub worker_id: String,
    /// When it started.
    pub at: DateTime<Utc>,
}

/// A task ending, for [`FunctionStore::move_tasks`](crate::FunctionStore::move_tasks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskEnd {
    /// Id of the task that ended; a task already final is left as it is.
    pub task_id: String,
    /// How it ended.
    pub state: FinalState,
    /// Why, for all but complete.
    pub message: String,
    /// When it ended.
    pub at: DateTime<Utc>,
}

/// A task going back for another attempt, for
/// [`FunctionStore::move_tasks`](crate::FunctionStore::move_tasks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRetry<'a> {
    /// Id of the task sent back; its open attempt is closed as retried (as
    /// lost, for a requeue), and a task already final is left as it is.
    pub task_id: &'a str,
    /// Why its attempt failed.
    pub message: &'a str,
}

/// Task transitions written in one transaction, in this order: new
/// tasks, starts, retries and requeues, ends (each task at most once among
/// the starts, and among the ends).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskMoves<'a> {
    /// Tasks to insert before the rest moves them: a task whose row is
    /// written by the dispatcher's batch rather than by its caller. One that
    /// starts in the same move (and is not retried there) goes in as it
    /// stands after its start and end; the others go in pending.
    pub inserts: &'a [NewTask],
    /// Attempts that started.
    pub starts: &'a [TaskStart],
    /// Tasks going back for another attempt.
    pub retries: &'a [TaskRetry<'a>],
    /// Tasks whose attempt was lost with its worker (infrastructure, not
    /// the function): back to pending to run again elsewhere under the same
    /// attempt number; the message says why.
    pub requeues: &'a [TaskRetry<'a>],
    /// Tasks that ended.
    pub ends: &'a [TaskEnd],
}

/// How many tasks each part of a [`TaskMoves`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TasksMoved {
    /// Tasks inserted.
    pub inserted: u64,
    /// Tasks marked running.
    pub started: u64,
    /// Tasks marked for retry.
    pub retried: u64,
    /// Tasks back to pending after a lost worker.
    pub requeued: u64,
    /// Tasks ended.
    pub ended: u64,
}

/// One invocation of a stub and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    /// Caller-made id (uuid v7 text).
    pub id: String,
    /// The workspace that owns it.
    pub workspace_id: String,
    /// The stub it runs.
    pub stub_id: String,
    /// The function it calls.
    pub function_name: String,
    /// Where it stands.
    pub state: TaskState,
    /// How many attempts have started (0 while first pending).
    pub attempts: u32,
    /// The container of the latest attempt; empty before the first.
    pub container_id: String,
    /// The worker of the latest attempt; empty before the first.
    pub worker_id: String,
    /// Why it is retried or how it ended; empty otherwise.
    pub message: String,
    /// When it was submitted.
    pub created_at: DateTime<Utc>,
    /// When its first attempt started.
    pub started_at: Option<DateTime<Utc>>,
    /// When it reached a final state.
    pub ended_at: Option<DateTime<Utc>>,
}

/// One attempt of a task: where it ran and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    /// Its number (1 for the first); an attempt handed back before it ended
    /// runs again under the same number.
    pub attempt: u32,
    /// The container it ran in.
    pub container_id: String,
    /// The worker it ran on.
    pub worker_id: String,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it ended; None while it runs.
    pub ended_at: Option<DateTime<Utc>>,
    /// How it ended; None while it runs.
    pub outcome: Option<AttemptOutcome>,
    /// Why it failed or was handed back.
    pub message: String,
}

/// A deploy of an app, for [`FunctionStore::deploy`](crate::FunctionStore::deploy):
/// the app's functions, each with the stub it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDeployment {
    /// The workspace that owns it (and every stub it names).
    pub workspace_id: String,
    /// The app's name.
    pub app_name: String,
    /// (function name, stub id) for every function of the app, names unique.
    pub functions: Vec<(String, String)>,
    /// The schedules of its functions; the app's schedules are replaced by
    /// these (see [`NewSchedule`](crate::NewSchedule)).
    pub schedules: Vec<crate::NewSchedule>,
    /// The web endpoints of its functions; the app's endpoints are replaced
    /// by these (see [`NewEndpoint`](crate::NewEndpoint)).
    pub endpoints: Vec<crate::NewEndpoint>,
    /// The token that deploys it.
    pub deployed_by: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// A function of the current version of a deployed app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentRecord {
    /// The workspace that owns it.
    pub workspace_id: String,
    /// The app's name.
    pub app_name: String,
    /// The function's name within the app.
    pub function_name: String,
    /// The stub it runs.
    pub stub_id: String,
    /// The app's version (1 for the first deploy, one more per redeploy).
    pub version: u32,
    /// The token that deployed this version.
    pub deployed_by: String,
    /// When this version was deployed.
    pub created_at: DateTime<Utc>,
}
