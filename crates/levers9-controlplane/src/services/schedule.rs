//! Schedules, for FunctionService: the schedules a deploy names, checked and
//! turned into store rows, and their listing.

use chrono::{DateTime, SecondsFormat, Utc};
use levers9_api::v1::{
    DeployedFunction, ListSchedulesRequest, ListSchedulesResponse, ScheduleInfo,
};
use levers9_store::{NewSchedule, ScheduleRecord};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::schedules::spec::ScheduleSpec;
use crate::schedules::ticks;
use crate::Shared;

/// The store rows of the schedules of a deploy's functions, first ticks
/// counted from `now`; InvalidArgument naming the function for a schedule
/// that cannot be used.
pub(super) fn of_deploy(
    workspace_id: &str,
    app_name: &str,
    functions: &[DeployedFunction],
    now: DateTime<Utc>,
) -> Result<Vec<NewSchedule>, ApiError> {
    let mut schedules = Vec::new();
    for f in functions {
        let Some(schedule) = &f.schedule else {
            continue;
        };
        let spec = ScheduleSpec::from_api(schedule).map_err(|e| {
            ApiError::InvalidArgument(format!("the schedule of {:?}: {e}", f.function_name))
        })?;
        schedules.push(NewSchedule {
            id: ticks::schedule_id(workspace_id, app_name, &f.function_name),
            function_name: f.function_name.clone(),
            spec: spec.to_stored(),
            next_tick: ticks::first_tick(&spec, now.timestamp()),
        });
    }
    Ok(schedules)
}

fn tick_text(tick: i64) -> String {
    DateTime::from_timestamp(tick, 0)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
        .unwrap_or_default()
}

fn info(record: ScheduleRecord) -> Result<ScheduleInfo, ApiError> {
    let spec = ScheduleSpec::from_stored(&record.spec)?;
    Ok(ScheduleInfo {
        app_name: record.app_name,
        function_name: record.function_name,
        schedule: Some(spec.to_api()),
        stub_id: record.stub_id,
        last_tick: record.last_tick.map(tick_text).unwrap_or_default(),
        last_task_id: record.last_task_id.unwrap_or_default(),
        next_tick: tick_text(record.next_tick),
    })
}

pub(super) async fn list(
    shared: &Shared,
    caller: &Caller,
    _request: ListSchedulesRequest,
) -> Result<ListSchedulesResponse, ApiError> {
    let records = shared
        .functions
        .list_schedules(&caller.workspace.id)
        .await?;
    Ok(ListSchedulesResponse {
        schedules: records.into_iter().map(info).collect::<Result<_, _>>()?,
    })
}

#[cfg(test)]
mod tests {
    use levers9_api::v1::{schedule, Schedule};

    use super::*;

    fn function(name: &str, kind: Option<schedule::Kind>) -> DeployedFunction {
        DeployedFunction {
            function_name: name.into(),
            stub_id: "stub".into(),
            schedule: kind.map(|kind| Schedule { kind: Some(kind) }),
            endpoint: None,
        }
    }

    #[test]
    fn a_bad_schedule_is_invalid_argument_naming_the_function() {
        let functions = [
            function("plain", None),
            function("nightly", Some(schedule::Kind::Cron("0 25 * * *".into()))),
        ];
        let err = of_deploy("ws", "app", &functions, Utc::now()).unwrap_err();
        assert!(matches!(err, ApiError::InvalidArgument(_)), "{err:?}");
        let text = err.to_string();
        assert!(
            text.starts_with(
                "the schedule of \"nightly\": cron expression \"0 25 * * *\" does not parse"
            ),
            "{text}"
        );
        let empty = [DeployedFunction {
            schedule: Some(Schedule { kind: None }),
            ..function("f", None)
        }];
        let err = of_deploy("ws", "app", &empty, Utc::now()).unwrap_err();
        assert!(
            err.to_string()
                .contains("needs a cron expression or a period"),
            "{err}"
        );
    }

    #[test]
    fn only_scheduled_functions_get_rows_starting_after_now() {
        let now = DateTime::from_timestamp(1_767_225_601, 0).unwrap();
        let functions = [
            function("plain", None),
            function("often", Some(schedule::Kind::PeriodSeconds(2))),
        ];
        let rows = of_deploy("ws", "app", &functions, now).unwrap();
        assert_eq!(
            rows,
            vec![NewSchedule {
                id: ticks::schedule_id("ws", "app", "often"),
                function_name: "often".into(),
                spec: "period:2".into(),
                next_tick: 1_767_225_602,
            }]
        );
    }
}
