//! The records of schedules: deployed functions the controlplane calls on
//! its own at every tick of a cron expression or a period.

use chrono::{DateTime, Utc};

use crate::function_model::NewTask;

/// A schedule named by a deploy, for
/// [`NewDeployment::schedules`](crate::NewDeployment::schedules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSchedule {
    /// Derived by the caller from (workspace, app, function), so a redeploy
    /// of the function keeps it.
    pub id: String,
    /// A function of the deploy (its stub is the deploy's).
    pub function_name: String,
    /// `cron:<five fields>` or `period:<seconds>`; a redeploy with the same
    /// spec keeps the stored ticks, another spec takes `next_tick`.
    pub spec: String,
    /// The first tick, in seconds since the Unix epoch (UTC), for a new
    /// schedule or a changed spec.
    pub next_tick: i64,
}

/// A schedule of the current deploy of an app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRecord {
    /// Its id (see [`NewSchedule::id`]).
    pub id: String,
    /// The workspace that owns it.
    pub workspace_id: String,
    /// The name of the deployed app whose current deploy named it.
    pub app_name: String,
    /// The function within the app.
    pub function_name: String,
    /// The stub its runs call.
    pub stub_id: String,
    /// See [`NewSchedule::spec`].
    pub spec: String,
    /// The app version that set it.
    pub version: u32,
    /// The last tick fired (seconds since the epoch), if any.
    pub last_tick: Option<i64>,
    /// The task of the last tick fired.
    pub last_task_id: Option<String>,
    /// The next tick to fire (seconds since the epoch).
    pub next_tick: i64,
    /// When the schedule was first deployed.
    pub created_at: DateTime<Utc>,
}

/// One tick of a schedule fired, for
/// [`FunctionStore::fire_schedule`](crate::FunctionStore::fire_schedule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleFire {
    /// Id of the schedule that fired (see [`NewSchedule::id`]).
    pub schedule_id: String,
    /// The `next_tick` the firer read: the fire takes effect only if the
    /// row still has it, so of two firers of one tick one wins.
    pub expected_next_tick: i64,
    /// The tick that fired, in seconds since the epoch; stored as the
    /// schedule's `last_tick`.
    pub tick: i64,
    /// The tick after it.
    pub next_tick: i64,
    /// The run, inserted unless a task with its id exists (its id is
    /// derived from (schedule, tick)).
    pub task: NewTask,
}

/// What [`FunctionStore::fire_schedule`](crate::FunctionStore::fire_schedule) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fired {
    /// The schedule moved on and the task is new: submit its input.
    Submitted,
    /// The schedule moved on, but the task was there already: nothing to
    /// submit.
    AlreadyThere,
    /// The schedule no longer had the expected tick (another firer moved it,
    /// or a redeploy changed or removed it): nothing changed.
    Stale,
}
