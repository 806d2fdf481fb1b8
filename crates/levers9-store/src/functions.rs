//! Deployed functions and their runs: the objects a workspace uploaded, the stubs
//! (deployable functions) made from them, and the tasks (invocations) of a stub.
//!
//! The store guards one rule of the task state machine itself: a final state is
//! never left. Every transition is a conditional update that changes nothing once
//! a task is final, so a late result from a worker cannot overwrite a cancel, and
//! the caller learns from the returned `bool` whether its transition took effect.

use chrono::{DateTime, Utc};

use crate::endpoint_model::EndpointRecord;
use crate::error::StoreError;
use crate::function_model::{
    AttemptRecord, DeploymentRecord, NewDeployment, NewTask, StubRecord, TaskEnd, TaskMoves,
    TaskRecord, TaskRetry, TaskStart, TasksMoved,
};
use crate::function_sql;
use crate::postgres::PostgresStore;
use crate::schedule_model::{Fired, ScheduleFire, ScheduleRecord};
use crate::sqlite::SqliteStore;
use crate::task_state::FinalState;

/// Functions, stubs and tasks, whichever database holds them.
#[async_trait::async_trait]
pub trait FunctionStore: Send + Sync + 'static {
    /// Records that the workspace holds the object (idempotent: a second put keeps the first row).
    async fn put_object(
        &self,
        workspace_id: &str,
        digest: &str,
        size: i64,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError>;

    /// Whether the workspace holds the object (another workspace's object looks missing).
    async fn has_object(&self, workspace_id: &str, digest: &str) -> Result<bool, StoreError>;

    /// Inserts the stub unless one with its id exists, and returns the stored one (the id
    /// is derived by the caller from the stub's content, so a concurrent twin is the same
    /// stub). AlreadyExists if the id belongs to a stub of another workspace.
    async fn get_or_create_stub(&self, stub: StubRecord) -> Result<StubRecord, StoreError>;

    /// The stub of this workspace with this id.
    async fn get_stub(
        &self,
        workspace_id: &str,
        stub_id: &str,
    ) -> Result<Option<StubRecord>, StoreError>;

    /// The workspace's stubs, newest first, at most `limit`.
    async fn list_stubs(
        &self,
        workspace_id: &str,
        limit: u32,
    ) -> Result<Vec<StubRecord>, StoreError>;

    /// Stores the next version of an app (1 for a new one) with its functions, in
    /// one transaction, and returns its number. Each stub must belong to the
    /// workspace. AlreadyExists if a function is named twice or a concurrent
    /// deploy of the app took the version.
    async fn deploy(&self, deployment: NewDeployment) -> Result<u32, StoreError>;

    /// The functions of the current version of each of the workspace's apps, by
    /// app then function name.
    async fn list_deployments(
        &self,
        workspace_id: &str,
    ) -> Result<Vec<DeploymentRecord>, StoreError>;

    /// A function of the current version of an app of the workspace.
    async fn get_deployment(
        &self,
        workspace_id: &str,
        app_name: &str,
        function_name: &str,
    ) -> Result<Option<DeploymentRecord>, StoreError>;

    /// The stubs of the current version of every deployed app, in every
    /// workspace, each once: (workspace id, stub id). The dispatcher keeps
    /// their `min_containers` warm.
    async fn deployed_stubs(&self) -> Result<Vec<(String, String)>, StoreError>;

    /// The web endpoint `name` of the workspace named `workspace_name`
    /// (set by the current deploy of one of its apps).
    async fn find_endpoint(
        &self,
        workspace_name: &str,
        name: &str,
    ) -> Result<Option<EndpointRecord>, StoreError>;

    /// The web endpoint `name` as `version` of the workspace's app
    /// `app_name` set it, if that version served it (for paths pinned to a
    /// version).
    async fn find_endpoint_version(
        &self,
        workspace_id: &str,
        app_name: &str,
        name: &str,
        version: u32,
    ) -> Result<Option<EndpointRecord>, StoreError>;

    /// The versions of the workspace's app `app_name` that served the web
    /// endpoint `name`, ascending.
    async fn endpoint_versions(
        &self,
        workspace_id: &str,
        app_name: &str,
        name: &str,
    ) -> Result<Vec<u32>, StoreError>;

    /// The schedules of the current deploys of the workspace's apps, by app
    /// then function name.
    async fn list_schedules(&self, workspace_id: &str) -> Result<Vec<ScheduleRecord>, StoreError>;

    /// Schedules of any workspace whose next tick (seconds since the epoch)
    /// is at or before `now`, soonest first, at most `limit`.
    async fn due_schedules(&self, now: i64, limit: u32) -> Result<Vec<ScheduleRecord>, StoreError>;

    /// Fires a tick in one transaction: moves the schedule to its next tick
    /// only if it still expects the one read, and inserts the tick's task
    /// unless one with its id exists (see [`Fired`]).
    async fn fire_schedule(&self, fire: &ScheduleFire) -> Result<Fired, StoreError>;

    /// Inserts tasks (state "pending", attempts 0) in one transaction: all or none.
    /// Each task's stub must belong to its workspace.
    async fn insert_tasks(&self, tasks: &[NewTask]) -> Result<(), StoreError>;

    /// A task of this workspace.
    async fn get_task(
        &self,
        workspace_id: &str,
        task_id: &str,
    ) -> Result<Option<TaskRecord>, StoreError>;

    /// A task by id, whatever its workspace (for the controlplane's own loops).
    async fn find_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError>;

    /// The workspace's tasks, newest first, at most `limit`.
    async fn list_tasks(
        &self,
        workspace_id: &str,
        limit: u32,
    ) -> Result<Vec<TaskRecord>, StoreError>;

    /// Task transitions in one transaction (see [`TaskMoves`]), each only
    /// for a task that is not final, so a late result, retry or start never
    /// overwrites a cancel:
    /// - a start sets state "running", attempts, container and worker, and
    ///   started_at if unset, and opens an attempt row (closing one left
    ///   open, as handed back unfinished);
    /// - a retry sets state "retry" and the message, and closes the attempt;
    /// - an end sets its final state, message and ended_at, and closes the
    ///   attempt.
    async fn move_tasks(&self, moves: &TaskMoves<'_>) -> Result<TasksMoved, StoreError>;

    /// Starts attempts as [`FunctionStore::move_tasks`] does; returns how many changed.
    async fn start_tasks(&self, starts: &[TaskStart]) -> Result<u64, StoreError> {
        let moves = TaskMoves {
            starts,
            ..TaskMoves::default()
        };
        Ok(self.move_tasks(&moves).await?.started)
    }

    /// Sends a task back for another attempt as [`FunctionStore::move_tasks`]
    /// does; true if it changed.
    async fn retry_task(&self, task_id: &str, message: &str) -> Result<bool, StoreError> {
        let retries = [TaskRetry { task_id, message }];
        let moves = TaskMoves {
            retries: &retries,
            ..TaskMoves::default()
        };
        Ok(self.move_tasks(&moves).await?.retried == 1)
    }

    /// Ends tasks as [`FunctionStore::move_tasks`] does; returns how many changed.
    async fn finish_tasks(&self, ends: &[TaskEnd]) -> Result<u64, StoreError> {
        let moves = TaskMoves {
            ends,
            ..TaskMoves::default()
        };
        Ok(self.move_tasks(&moves).await?.ended)
    }

    /// The attempts of a task, oldest first (the caller checked the task's
    /// workspace).
    async fn task_attempts(&self, task_id: &str) -> Result<Vec<AttemptRecord>, StoreError>;

    /// Ends one task as [`FunctionStore::finish_tasks`] does; true if it changed.
    async fn finish_task(
        &self,
        task_id: &str,
        state: FinalState,
        message: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let end = TaskEnd {
            task_id: task_id.to_owned(),
            state,
            message: message.to_owned(),
            at,
        };
        Ok(self.finish_tasks(&[end]).await? == 1)
    }

    /// Tasks not final, oldest first, at most `limit` (for a controlplane that takes
    /// over dispatch).
    async fn unfinished_tasks(&self, limit: u32) -> Result<Vec<TaskRecord>, StoreError>;
}

/// Implements [`FunctionStore`] over a reader and a writer pool (the same pool
/// on Postgres).
macro_rules! function_store_impl {
    ($store:ty, $reader:ident, $writer:ident) => {
        #[async_trait::async_trait]
        impl FunctionStore for $store {
            async fn put_object(
                &self,
                workspace_id: &str,
                digest: &str,
                size: i64,
                at: DateTime<Utc>,
            ) -> Result<(), StoreError> {
                function_sql::put_object(&self.$writer, workspace_id, digest, size, at).await
            }
            async fn has_object(
                &self,
                workspace_id: &str,
                digest: &str,
            ) -> Result<bool, StoreError> {
                function_sql::has_object(&self.$reader, workspace_id, digest).await
            }
            async fn get_or_create_stub(&self, stub: StubRecord) -> Result<StubRecord, StoreError> {
                // Both statements on the writer, so the read follows the write.
                function_sql::get_or_create_stub(&self.$writer, &stub).await
            }
            async fn get_stub(
                &self,
                workspace_id: &str,
                stub_id: &str,
            ) -> Result<Option<StubRecord>, StoreError> {
                function_sql::get_stub(&self.$reader, workspace_id, stub_id).await
            }
            async fn list_stubs(
                &self,
                workspace_id: &str,
                limit: u32,
            ) -> Result<Vec<StubRecord>, StoreError> {
                function_sql::list_stubs(&self.$reader, workspace_id, limit).await
            }
            async fn deploy(&self, deployment: NewDeployment) -> Result<u32, StoreError> {
                function_sql::deployments::deploy(&self.$writer, &deployment).await
            }
            async fn list_deployments(
                &self,
                workspace_id: &str,
            ) -> Result<Vec<DeploymentRecord>, StoreError> {
                function_sql::deployments::list(&self.$reader, workspace_id).await
            }
            async fn get_deployment(
                &self,
                workspace_id: &str,
                app_name: &str,
                function_name: &str,
            ) -> Result<Option<DeploymentRecord>, StoreError> {
                function_sql::deployments::get(&self.$reader, workspace_id, app_name, function_name)
                    .await
            }
            async fn deployed_stubs(&self) -> Result<Vec<(String, String)>, StoreError> {
                function_sql::deployments::deployed_stubs(&self.$reader).await
            }
            async fn find_endpoint(
                &self,
                workspace_name: &str,
                name: &str,
            ) -> Result<Option<EndpointRecord>, StoreError> {
                function_sql::endpoints::find(&self.$reader, workspace_name, name).await
            }
            async fn find_endpoint_version(
                &self,
                workspace_id: &str,
                app_name: &str,
                name: &str,
                version: u32,
            ) -> Result<Option<EndpointRecord>, StoreError> {
                function_sql::endpoints::find_version(
                    &self.$reader,
                    workspace_id,
                    app_name,
                    name,
                    version,
                )
                .await
            }
            async fn endpoint_versions(
                &self,
                workspace_id: &str,
                app_name: &str,
                name: &str,
            ) -> Result<Vec<u32>, StoreError> {
                function_sql::endpoints::versions(&self.$reader, workspace_id, app_name, name).await
            }
            async fn list_schedules(
                &self,
                workspace_id: &str,
            ) -> Result<Vec<ScheduleRecord>, StoreError> {
                function_sql::schedules::list(&self.$reader, workspace_id).await
            }
            async fn due_schedules(
                &self,
                now: i64,
                limit: u32,
            ) -> Result<Vec<ScheduleRecord>, StoreError> {
                // The writer, so a tick fired here a moment ago is seen moved.
                function_sql::schedules::due(&self.$writer, now, limit).await
            }
            async fn fire_schedule(&self, fire: &ScheduleFire) -> Result<Fired, StoreError> {
                function_sql::schedules::fire(&self.$writer, fire).await
            }
            async fn insert_tasks(&self, tasks: &[NewTask]) -> Result<(), StoreError> {
                function_sql::insert_tasks(&self.$writer, tasks).await
            }
            async fn get_task(
                &self,
                workspace_id: &str,
                task_id: &str,
            ) -> Result<Option<TaskRecord>, StoreError> {
                function_sql::get_task(&self.$reader, Some(workspace_id), task_id).await
            }
            async fn find_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
                function_sql::get_task(&self.$reader, None, task_id).await
            }
            async fn list_tasks(
                &self,
                workspace_id: &str,
                limit: u32,
            ) -> Result<Vec<TaskRecord>, StoreError> {
                function_sql::list_tasks(&self.$reader, workspace_id, limit).await
            }
            async fn move_tasks(&self, moves: &TaskMoves<'_>) -> Result<TasksMoved, StoreError> {
                function_sql::move_tasks(&self.$writer, moves).await
            }
            async fn task_attempts(&self, task_id: &str) -> Result<Vec<AttemptRecord>, StoreError> {
                function_sql::attempts::list(&self.$reader, task_id).await
            }
            async fn unfinished_tasks(&self, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
                function_sql::unfinished_tasks(&self.$reader, limit).await
            }
        }
    };
}

function_store_impl!(PostgresStore, pool, pool);
function_store_impl!(SqliteStore, reader, writer);
