//! Schedules of deployed functions (see `migrations/*/0008_schedules.sql`).

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use crate::backend::{Backend, Statement, Transactional};
use crate::error::StoreError;
use crate::schedule_model::{Fired, NewSchedule, ScheduleFire, ScheduleRecord};
use crate::sql::at_rest;

/// The schedule columns, in `ScheduleRow` order.
macro_rules! schedule_columns {
    () => {
        "id, workspace_id, app_name, function_name, stub_id, spec, version, last_tick, \
         last_task_id, next_tick, created_at"
    };
}

#[derive(FromRow)]
pub(crate) struct ScheduleRow {
    id: String,
    workspace_id: String,
    app_name: String,
    function_name: String,
    stub_id: String,
    spec: String,
    version: i64,
    last_tick: Option<i64>,
    last_task_id: Option<String>,
    next_tick: i64,
    created_at: DateTime<Utc>,
}

impl ScheduleRow {
    fn into_record(self) -> Result<ScheduleRecord, StoreError> {
        let version = u32::try_from(self.version).map_err(|_| {
            StoreError::Corrupt(format!("schedule {:?}: version {}", self.id, self.version))
        })?;
        Ok(ScheduleRecord {
            id: self.id,
            workspace_id: self.workspace_id,
            app_name: self.app_name,
            function_name: self.function_name,
            stub_id: self.stub_id,
            spec: self.spec,
            version,
            last_tick: self.last_tick,
            last_task_id: self.last_task_id,
            next_tick: self.next_tick,
            created_at: self.created_at,
        })
    }
}

/// Replaces the app's schedules by those of its new `version`, inside the
/// deploy's transaction (`tx`). A schedule deployed again with the same
/// spec keeps its ticks; one whose function left the app or lost its
/// schedule is deleted.
pub(crate) async fn replace(
    tx: &impl Backend,
    workspace_id: &str,
    app_name: &str,
    version: i64,
    functions: &[(String, String)],
    schedules: &[NewSchedule],
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    for s in schedules {
        let Some((_, stub_id)) = functions.iter().find(|(f, _)| *f == s.function_name) else {
            return Err(StoreError::Invalid(format!(
                "a schedule for {:?}, which is not a function of app {app_name:?}",
                s.function_name
            )));
        };
        // Every SET reads the row as it was, so the CASE sees the old spec.
        let upsert = Statement::new(
            "INSERT INTO schedules \
             (id, workspace_id, app_name, function_name, stub_id, spec, version, next_tick, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             ON CONFLICT (id) DO UPDATE SET stub_id = excluded.stub_id, \
             version = excluded.version, spec = excluded.spec, \
             next_tick = CASE WHEN schedules.spec = excluded.spec \
             THEN schedules.next_tick ELSE excluded.next_tick END",
        )
        .bind(s.id.as_str())
        .bind(workspace_id)
        .bind(app_name)
        .bind(s.function_name.as_str())
        .bind(stub_id.as_str())
        .bind(s.spec.as_str())
        .bind(version)
        .bind(s.next_tick)
        .bind(at_rest(at));
        tx.execute(upsert).await?;
    }
    let delete = Statement::new(
        "DELETE FROM schedules WHERE workspace_id = $1 AND app_name = $2 AND version < $3",
    )
    .bind(workspace_id)
    .bind(app_name)
    .bind(version);
    tx.execute(delete).await?;
    Ok(())
}

/// The workspace's schedules, by app then function.
pub(crate) async fn list(
    pool: &impl Backend,
    workspace_id: &str,
) -> Result<Vec<ScheduleRecord>, StoreError> {
    let select = Statement::new(concat!(
        "SELECT ",
        schedule_columns!(),
        " FROM schedules WHERE workspace_id = $1 ORDER BY app_name, function_name"
    ))
    .bind(workspace_id);
    let rows: Vec<ScheduleRow> = pool.fetch_all(select).await?;
    rows.into_iter().map(ScheduleRow::into_record).collect()
}

/// Schedules whose next tick is at or before `now`, soonest first, at most `limit`.
pub(crate) async fn due(
    pool: &impl Backend,
    now: i64,
    limit: u32,
) -> Result<Vec<ScheduleRecord>, StoreError> {
    let select = Statement::new(concat!(
        "SELECT ",
        schedule_columns!(),
        " FROM schedules WHERE next_tick <= $1 ORDER BY next_tick, id LIMIT $2"
    ))
    .bind(now)
    .bind(i64::from(limit));
    let rows: Vec<ScheduleRow> = pool.fetch_all(select).await?;
    rows.into_iter().map(ScheduleRow::into_record).collect()
}

/// Moves the schedule on and inserts the tick's task, in one transaction.
pub(crate) async fn fire(
    pool: &impl Transactional,
    fire: &ScheduleFire,
) -> Result<Fired, StoreError> {
    // RETURNING rather than a row count: Backend::execute reports none.
    let tx = pool.begin().await?;
    let advance = Statement::new(
        "UPDATE schedules SET last_tick = $1, last_task_id = $2, next_tick = $3 \
         WHERE id = $4 AND next_tick = $5 AND stub_id = $6 RETURNING id",
    )
    .bind(fire.tick)
    .bind(fire.task.id.as_str())
    .bind(fire.next_tick)
    .bind(fire.schedule_id.as_str())
    .bind(fire.expected_next_tick)
    .bind(fire.task.stub_id.as_str());
    let moved: Option<(String,)> = tx.fetch_optional(advance).await?;
    if moved.is_none() {
        // Dropping the transaction rolls it back; nothing was written.
        return Ok(Fired::Stale);
    }
    let insert = Statement::new(
        "INSERT INTO tasks (id, workspace_id, stub_id, function_name, created_at) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING RETURNING id",
    )
    .bind(fire.task.id.as_str())
    .bind(fire.task.workspace_id.as_str())
    .bind(fire.task.stub_id.as_str())
    .bind(fire.task.function_name.as_str())
    .bind(at_rest(fire.task.created_at));
    let inserted: Option<(String,)> = tx.fetch_optional(insert).await?;
    pool.commit(tx).await?;
    Ok(if inserted.is_some() {
        Fired::Submitted
    } else {
        Fired::AlreadyThere
    })
}
