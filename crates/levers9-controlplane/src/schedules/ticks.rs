//! The tick logic, free of clocks and stores: which tick a due schedule
//! fires, which comes after it, and the ids that make a fire idempotent.
//!
//! # Guarantees
//! - A schedule whose `next_tick` is at or before now fires **once**, for
//!   the latest tick at or before now: ticks missed while no replica ran
//!   (or while the lease moved) are not fired one by one.
//! - The next tick is strictly after now, so the fired tick is never fired
//!   again by this schedule row.
//! - The task of a tick is named by (schedule, tick) alone, so two firers
//!   of one tick name the same task and the store keeps one.

use sha2::{Digest, Sha256};

use super::spec::ScheduleSpec;

/// What a due schedule does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The tick to fire now, in seconds since the epoch: the latest due one
    /// (earlier missed ones are counted in `skipped`, not fired).
    pub tick: i64,
    /// The tick after it (`i64::MAX`: never, past the year 9999).
    pub next_tick: i64,
    /// Ticks at or after the stored `next_tick` and before `tick` that are
    /// not fired (missed while no replica fired): 0 in the normal case.
    /// Counted for periods only (a cron schedule reports 0 or 1).
    pub skipped: u64,
}

/// The plan for a schedule whose stored next tick is `next_tick`, at `now`
/// (seconds since the epoch); None while it is not due.
pub fn plan(spec: &ScheduleSpec, next_tick: i64, now: i64) -> Option<Plan> {
    if next_tick > now {
        return None;
    }
    // `next_tick` is itself a tick of `spec` (a deploy or a fire stored
    // it), so the latest tick at or before now is never before it.
    let tick = spec
        .latest_at_or_before(now)
        .filter(|t| *t >= next_tick)
        .unwrap_or(next_tick);
    let skipped = match spec {
        ScheduleSpec::Period { seconds } => {
            u64::try_from(tick - next_tick).unwrap_or(0) / (*seconds).max(1)
        }
        ScheduleSpec::Cron { .. } => u64::from(tick > next_tick),
    };
    Some(Plan {
        tick,
        next_tick: spec.next_after(now).unwrap_or(i64::MAX),
        skipped,
    })
}

/// The first tick of a schedule deployed at `now`.
pub fn first_tick(spec: &ScheduleSpec, now: i64) -> i64 {
    spec.next_after(now).unwrap_or(i64::MAX)
}

/// A schedule's id: the same for the same function of the same app, so a
/// redeploy keeps the schedule (and its ticks).
pub fn schedule_id(workspace_id: &str, app_name: &str, function_name: &str) -> String {
    let mut hash = Sha256::new();
    for part in [workspace_id, app_name, function_name] {
        hash.update(part.as_bytes());
        // A separator no name holds, so ("ab", "c") and ("a", "bc") differ.
        hash.update([0]);
    }
    format!("s{}", &hex::encode(hash.finalize())[..20])
}

/// The id of the task of a tick of a schedule.
pub fn task_id(schedule_id: &str, tick: i64) -> String {
    format!("t-{schedule_id}-{tick}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-01-01T00:00:00Z.
    const NEW_YEAR: i64 = 1_767_225_600;

    /// A clock the test moves by hand.
    struct Clock(i64);

    impl Clock {
        fn advance(&mut self, seconds: i64) -> i64 {
            self.0 += seconds;
            self.0
        }
    }

    #[test]
    fn a_schedule_fires_each_tick_once_as_the_clock_moves() {
        let spec = ScheduleSpec::period(5).unwrap();
        let mut clock = Clock(NEW_YEAR + 1);
        let mut next = first_tick(&spec, clock.0);
        assert_eq!(next, NEW_YEAR + 5);
        let mut fired = Vec::new();
        for _ in 0..40 {
            let now = clock.advance(1);
            if let Some(p) = plan(&spec, next, now) {
                assert_eq!(p.skipped, 0);
                fired.push(p.tick);
                next = p.next_tick;
            }
        }
        // 41 seconds after NEW_YEAR + 1: the ticks at 5, 10, … 40.
        let expected: Vec<i64> = (1..=8).map(|k| NEW_YEAR + 5 * k).collect();
        assert_eq!(fired, expected);
    }

    #[test]
    fn a_schedule_not_due_does_nothing() {
        let spec = ScheduleSpec::cron("*/5 * * * *").unwrap();
        assert_eq!(plan(&spec, NEW_YEAR + 300, NEW_YEAR + 299), None);
    }

    #[test]
    fn ticks_missed_while_no_replica_ran_fire_once_for_the_latest() {
        let spec = ScheduleSpec::period(60).unwrap();
        // Down from NEW_YEAR + 30 to one hour later.
        let p = plan(&spec, NEW_YEAR + 60, NEW_YEAR + 3_630).unwrap();
        assert_eq!(
            p,
            Plan {
                tick: NEW_YEAR + 3_600,
                next_tick: NEW_YEAR + 3_660,
                skipped: 59,
            }
        );
        // Fired again a moment later (another replica, same row read
        // before the first fire): the same tick, so the same task.
        let again = plan(&spec, NEW_YEAR + 60, NEW_YEAR + 3_631).unwrap();
        assert_eq!(again.tick, p.tick);

        let cron = ScheduleSpec::cron("0 * * * *").unwrap();
        let p = plan(&cron, NEW_YEAR + 3_600, NEW_YEAR + 5 * 3_600 + 7).unwrap();
        assert_eq!(p.tick, NEW_YEAR + 5 * 3_600);
        assert_eq!(p.next_tick, NEW_YEAR + 6 * 3_600);
        assert_eq!(p.skipped, 1);
    }

    #[test]
    fn a_tick_exactly_now_fires_and_the_next_is_after_now() {
        let spec = ScheduleSpec::period(2).unwrap();
        let p = plan(&spec, NEW_YEAR, NEW_YEAR).unwrap();
        assert_eq!((p.tick, p.next_tick), (NEW_YEAR, NEW_YEAR + 2));
    }

    #[test]
    fn ids_follow_the_function_and_the_tick() {
        let a = schedule_id("ws", "app", "f");
        assert_eq!(a, schedule_id("ws", "app", "f"));
        assert_ne!(a, schedule_id("ws", "ap", "pf"));
        assert_ne!(a, schedule_id("other", "app", "f"));
        assert_eq!(a.len(), 21);
        assert_eq!(task_id(&a, 42), format!("t-{a}-42"));
        assert_ne!(task_id(&a, 42), task_id(&a, 44));
    }
}
