//! `levers9 schedule list`: the schedules of deployed functions, with their
//! last and next runs. Schedules are set in code (`@function(schedule=…)`)
//! and take effect with `levers9 deploy`.

use anyhow::Result;
use clap::Subcommand;
use levers9_api::v1::{schedule, ListSchedulesRequest, Schedule};

use crate::output;

/// Schedule commands.
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// List the schedules of the deployed apps: function, when, last and next run (UTC).
    List,
}

/// How a schedule reads in a table: `cron */5 * * * *` or `every 5m`.
fn describe(schedule: Option<&Schedule>) -> String {
    match schedule.and_then(|s| s.kind.as_ref()) {
        Some(schedule::Kind::Cron(text)) => format!("cron {text}"),
        Some(schedule::Kind::PeriodSeconds(seconds)) => {
            let seconds = *seconds;
            let (amount, unit) = [(86_400, "d"), (3_600, "h"), (60, "m")]
                .into_iter()
                .find(|(size, _)| seconds % size == 0)
                .map_or((seconds, "s"), |(size, unit)| (seconds / size, unit));
            format!("every {amount}{unit}")
        }
        None => "-".to_owned(),
    }
}

/// Runs a schedule command.
pub async fn run(command: ScheduleCommand, context: Option<&str>) -> Result<()> {
    let client = super::connect(context).await?;
    match command {
        ScheduleCommand::List => {
            let schedules = client
                .functions()
                .list_schedules(ListSchedulesRequest {})
                .await?
                .into_inner()
                .schedules;
            let or_dash = |s: String| if s.is_empty() { "-".to_owned() } else { s };
            let rows: Vec<Vec<String>> = schedules
                .into_iter()
                .map(|s| {
                    vec![
                        s.app_name,
                        s.function_name,
                        describe(s.schedule.as_ref()),
                        or_dash(s.last_tick),
                        or_dash(s.last_task_id),
                        s.next_tick,
                    ]
                })
                .collect();
            output::table(
                &[
                    "APP",
                    "FUNCTION",
                    "SCHEDULE",
                    "LAST RUN",
                    "LAST TASK",
                    "NEXT RUN",
                ],
                &rows,
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_read_as_written() {
        let period = |s| Schedule {
            kind: Some(schedule::Kind::PeriodSeconds(s)),
        };
        assert_eq!(describe(Some(&period(300))), "every 5m");
        assert_eq!(describe(Some(&period(2))), "every 2s");
        assert_eq!(describe(Some(&period(7_200))), "every 2h");
        assert_eq!(describe(Some(&period(86_400))), "every 1d");
        assert_eq!(describe(Some(&period(90))), "every 90s");
        let cron = Schedule {
            kind: Some(schedule::Kind::Cron("*/5 * * * *".into())),
        };
        assert_eq!(describe(Some(&cron)), "cron */5 * * * *");
        assert_eq!(describe(None), "-");
    }
}
