//! What a schedule says: a cron expression or a period, parsed from the
//! API's [`Schedule`] and kept in the store as text.
//!
//! Ticks are whole seconds since the Unix epoch, in UTC.

use std::str::FromStr;

use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use levers9_api::v1::{schedule, Schedule};

use crate::error::ApiError;

/// The longest period: a year, so a typo of a few zeros is caught.
const MAX_PERIOD_SECONDS: u64 = 366 * 24 * 3600;

/// Why a schedule cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScheduleSpecError {
    /// The cron text does not parse.
    #[error(
        "cron expression {text:?} does not parse ({reason}): give five fields, \
         minute hour day-of-month month day-of-week (UTC), e.g. \"*/5 * * * *\""
    )]
    Cron {
        /// What was given.
        text: String,
        /// What the parser said.
        reason: String,
    },
    /// The period is zero or too long.
    #[error("a period of {0} seconds is not valid: give 1 to {MAX_PERIOD_SECONDS} seconds")]
    Period(u64),
    /// Neither a cron expression nor a period.
    #[error("a schedule needs a cron expression or a period")]
    Empty,
    /// A stored spec that this controlplane does not understand.
    #[error("stored schedule spec {0:?} is not cron:<expression> or period:<seconds>")]
    Stored(String),
}

impl From<ScheduleSpecError> for ApiError {
    fn from(err: ScheduleSpecError) -> Self {
        match err {
            ScheduleSpecError::Stored(_) => ApiError::Corrupt(err.to_string()),
            _ => ApiError::InvalidArgument(err.to_string()),
        }
    }
}

/// A schedule checked and parsed: from the API at deploy, or from its stored
/// `cron:`/`period:` text.
#[derive(Debug, Clone)]
pub enum ScheduleSpec {
    /// At the times a cron expression matches.
    Cron {
        /// The expression as given (trimmed).
        text: String,
        /// It, parsed.
        cron: Box<Cron>,
    },
    /// At the multiples of a number of seconds since the epoch.
    Period {
        /// Seconds between ticks, at least 1.
        seconds: u64,
    },
}

impl ScheduleSpec {
    /// Parses the API's schedule.
    pub fn from_api(schedule: &Schedule) -> Result<Self, ScheduleSpecError> {
        match &schedule.kind {
            Some(schedule::Kind::Cron(text)) => Self::cron(text),
            Some(schedule::Kind::PeriodSeconds(seconds)) => Self::period(*seconds),
            None => Err(ScheduleSpecError::Empty),
        }
    }

    /// A cron schedule: five fields (no seconds, no year) or a nickname.
    pub fn cron(text: &str) -> Result<Self, ScheduleSpecError> {
        let text = text.trim();
        let error = |reason: String| ScheduleSpecError::Cron {
            text: text.to_owned(),
            reason,
        };
        // The parser takes 5 to 7 fields; levers9 takes standard cron only.
        let fields = text.split_whitespace().count();
        if !(text.starts_with('@') && fields == 1) && fields != 5 {
            return Err(error(format!("{fields} fields")));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build()
            .parse(text)
            .map_err(|e| error(e.to_string()))?;
        // A pattern that never matches (30 February) is refused here rather
        // than never firing.
        let epoch = chrono::DateTime::UNIX_EPOCH;
        cron.find_next_occurrence(&epoch, false)
            .map_err(|e| error(e.to_string()))?;
        Ok(Self::Cron {
            text: text.to_owned(),
            cron: Box::new(cron),
        })
    }

    /// A schedule firing every `seconds`, from 1 to a year (a typo of a few
    /// zeros is refused).
    pub fn period(seconds: u64) -> Result<Self, ScheduleSpecError> {
        if seconds == 0 || seconds > MAX_PERIOD_SECONDS {
            return Err(ScheduleSpecError::Period(seconds));
        }
        Ok(Self::Period { seconds })
    }

    /// The text the store keeps.
    pub fn to_stored(&self) -> String {
        match self {
            Self::Cron { text, .. } => format!("cron:{text}"),
            Self::Period { seconds } => format!("period:{seconds}"),
        }
    }

    /// Parses the store's text.
    pub fn from_stored(stored: &str) -> Result<Self, ScheduleSpecError> {
        let bad = || ScheduleSpecError::Stored(stored.to_owned());
        if let Some(text) = stored.strip_prefix("cron:") {
            return Self::cron(text).map_err(|_| bad());
        }
        if let Some(seconds) = stored.strip_prefix("period:") {
            let seconds = u64::from_str(seconds).map_err(|_| bad())?;
            return Self::period(seconds).map_err(|_| bad());
        }
        Err(bad())
    }

    /// The API's form.
    pub fn to_api(&self) -> Schedule {
        Schedule {
            kind: Some(match self {
                Self::Cron { text, .. } => schedule::Kind::Cron(text.clone()),
                Self::Period { seconds } => schedule::Kind::PeriodSeconds(*seconds),
            }),
        }
    }

    /// The first tick strictly after `t`; None past the year 9999.
    pub fn next_after(&self, t: i64) -> Option<i64> {
        match self {
            Self::Period { seconds } => {
                let p = i64::try_from(*seconds).ok()?;
                t.div_euclid(p).checked_add(1)?.checked_mul(p)
            }
            Self::Cron { cron, .. } => {
                let at = chrono::DateTime::from_timestamp(t, 0)?;
                let next = cron.find_next_occurrence(&at, false).ok()?;
                Some(next.timestamp())
            }
        }
    }

    /// The last tick at or before `t`; None if there is none.
    pub fn latest_at_or_before(&self, t: i64) -> Option<i64> {
        match self {
            Self::Period { seconds } => {
                let p = i64::try_from(*seconds).ok()?;
                t.div_euclid(p).checked_mul(p)
            }
            Self::Cron { cron, .. } => {
                let at = chrono::DateTime::from_timestamp(t, 0)?;
                let previous = cron.find_previous_occurrence(&at, true).ok()?;
                Some(previous.timestamp())
            }
        }
    }
}

impl std::fmt::Display for ScheduleSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cron { text, .. } => write!(f, "cron {text:?}"),
            Self::Period { seconds } => write!(f, "every {seconds}s"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-01-01T00:00:00Z.
    const NEW_YEAR: i64 = 1_767_225_600;

    #[test]
    fn a_cron_that_does_not_parse_says_what_to_give() {
        for bad in ["*/5 * * *", "61 * * * *", "* * * * * *", "every day", ""] {
            let err = ScheduleSpec::cron(bad).unwrap_err().to_string();
            assert!(err.contains("does not parse"), "{bad}: {err}");
            assert!(err.contains("five fields"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_cron_that_never_matches_is_refused() {
        let err = ScheduleSpec::cron("0 0 30 2 *").unwrap_err().to_string();
        assert!(err.contains("does not parse"), "{err}");
    }

    #[test]
    fn cron_ticks_are_utc_minutes() {
        let spec = ScheduleSpec::cron("*/5 * * * *").unwrap();
        assert_eq!(spec.next_after(NEW_YEAR), Some(NEW_YEAR + 300));
        assert_eq!(spec.next_after(NEW_YEAR + 1), Some(NEW_YEAR + 300));
        assert_eq!(spec.latest_at_or_before(NEW_YEAR + 299), Some(NEW_YEAR));
        assert_eq!(spec.latest_at_or_before(NEW_YEAR), Some(NEW_YEAR));
        let daily = ScheduleSpec::cron("@daily").unwrap();
        assert_eq!(daily.next_after(NEW_YEAR), Some(NEW_YEAR + 86_400));
        let named = ScheduleSpec::cron("30 9 * jan mon").unwrap();
        // 2026-01-05 is the first Monday.
        assert_eq!(
            named.next_after(NEW_YEAR),
            Some(NEW_YEAR + 4 * 86_400 + 9 * 3600 + 1800)
        );
    }

    #[test]
    fn period_ticks_are_multiples_since_the_epoch() {
        let spec = ScheduleSpec::period(300).unwrap();
        assert_eq!(spec.next_after(NEW_YEAR), Some(NEW_YEAR + 300));
        assert_eq!(spec.next_after(NEW_YEAR + 299), Some(NEW_YEAR + 300));
        assert_eq!(spec.latest_at_or_before(NEW_YEAR + 299), Some(NEW_YEAR));
        for bad in [0, MAX_PERIOD_SECONDS + 1] {
            let err = ScheduleSpec::period(bad).unwrap_err().to_string();
            assert!(err.contains("is not valid"), "{err}");
        }
    }

    #[test]
    fn the_stored_text_round_trips() {
        for spec in [
            ScheduleSpec::cron(" 0 * * * * ").unwrap(),
            ScheduleSpec::period(2).unwrap(),
        ] {
            let stored = spec.to_stored();
            let back = ScheduleSpec::from_stored(&stored).unwrap();
            assert_eq!(back.to_stored(), stored);
            assert_eq!(back.to_api(), spec.to_api());
        }
        assert_eq!(ScheduleSpec::period(2).unwrap().to_stored(), "period:2");
        assert!(ScheduleSpec::from_stored("hourly").is_err());
    }
}
