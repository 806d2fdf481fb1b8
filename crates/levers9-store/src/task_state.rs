//! The states of a task and the ends of its attempts, as types, and the one
//! place that maps them to and from the text the database holds.
//!
//! The controlplane owns the transitions; the store guards one rule itself
//! (a final state is never left), which is why the SQL names the final
//! states by text (`unfinished!` in `function_sql.rs`, held to
//! [`FinalState::ALL`] by a unit test).

use std::fmt;
use std::str::FromStr;

/// How a task ended; a task in one of these never changes again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinalState {
    /// Finished with a result.
    Complete,
    /// Finished with an error (the function raised, or attempts ran out).
    Error,
    /// Finished because it ran past its time limit.
    Timeout,
    /// Finished because a user cancelled it.
    Cancelled,
}

impl FinalState {
    /// Every final state, in declaration order.
    pub const ALL: [FinalState; 4] = [
        FinalState::Complete,
        FinalState::Error,
        FinalState::Timeout,
        FinalState::Cancelled,
    ];

    /// As stored, and as the API shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            FinalState::Complete => "complete",
            FinalState::Error => "error",
            FinalState::Timeout => "timeout",
            FinalState::Cancelled => "cancelled",
        }
    }
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Accepted, waiting for a container (again, after a lost worker).
    Pending,
    /// An attempt is running in a container.
    Running,
    /// An attempt failed and the task waits for another.
    Retry,
    /// Over: nothing may change it any more.
    Ended(FinalState),
}

impl TaskState {
    /// Every state, in the order a task usually meets them.
    pub const ALL: [TaskState; 7] = [
        TaskState::Pending,
        TaskState::Running,
        TaskState::Retry,
        TaskState::Ended(FinalState::Complete),
        TaskState::Ended(FinalState::Error),
        TaskState::Ended(FinalState::Timeout),
        TaskState::Ended(FinalState::Cancelled),
    ];

    /// As stored, and as the API shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Pending => "pending",
            TaskState::Running => "running",
            TaskState::Retry => "retry",
            TaskState::Ended(end) => end.as_str(),
        }
    }

    /// Whether the task is over, so nothing may change it any more.
    pub fn is_final(self) -> bool {
        match self {
            TaskState::Pending | TaskState::Running | TaskState::Retry => false,
            TaskState::Ended(_) => true,
        }
    }
}

impl From<FinalState> for TaskState {
    fn from(end: FinalState) -> Self {
        TaskState::Ended(end)
    }
}

/// How one attempt of a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptOutcome {
    /// Failed with attempts left: the task waits for another.
    Retried,
    /// Its worker was lost: the task runs again without using an attempt.
    Lost,
    /// Handed back unfinished (its container or worker went away before
    /// it ended): it runs again under the same number.
    Requeued,
    /// The task ended with it.
    Ended(FinalState),
}

impl AttemptOutcome {
    /// Every outcome, in declaration order.
    pub const ALL: [AttemptOutcome; 7] = [
        AttemptOutcome::Retried,
        AttemptOutcome::Lost,
        AttemptOutcome::Requeued,
        AttemptOutcome::Ended(FinalState::Complete),
        AttemptOutcome::Ended(FinalState::Error),
        AttemptOutcome::Ended(FinalState::Timeout),
        AttemptOutcome::Ended(FinalState::Cancelled),
    ];

    /// As stored, and as the API shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Retried => "retried",
            AttemptOutcome::Lost => "lost",
            AttemptOutcome::Requeued => "requeued",
            AttemptOutcome::Ended(end) => end.as_str(),
        }
    }
}

impl From<FinalState> for AttemptOutcome {
    fn from(end: FinalState) -> Self {
        AttemptOutcome::Ended(end)
    }
}

/// Text that names none of the values of a state type: a row no version of
/// levers9 wrote, or a wire value from a peer that is not one of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {value:?}: expected one of {}", .expected.join(", "))]
pub struct UnknownState {
    /// What the text was to name ("task state", "attempt outcome").
    what: &'static str,
    /// The text as read, which matched none of `expected`.
    value: String,
    /// Every text that would have been understood.
    expected: Vec<&'static str>,
}

/// The value of `all` whose text is `text`: the single inverse of the
/// `as_str` of each type.
pub(crate) fn parse<T: Copy>(
    what: &'static str,
    all: &[T],
    as_str: fn(T) -> &'static str,
    text: &str,
) -> Result<T, UnknownState> {
    all.iter()
        .copied()
        .find(|value| as_str(*value) == text)
        .ok_or_else(|| UnknownState {
            what,
            value: text.to_owned(),
            expected: all.iter().map(|value| as_str(*value)).collect(),
        })
}

impl FromStr for FinalState {
    type Err = UnknownState;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse("final task state", &Self::ALL, Self::as_str, text)
    }
}

impl FromStr for TaskState {
    type Err = UnknownState;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse("task state", &Self::ALL, Self::as_str, text)
    }
}

impl FromStr for AttemptOutcome {
    type Err = UnknownState;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse("attempt outcome", &Self::ALL, Self::as_str, text)
    }
}

impl fmt::Display for FinalState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for AttemptOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_reads_back_from_its_text() {
        for state in TaskState::ALL {
            assert_eq!(state.as_str().parse(), Ok(state));
        }
        for end in FinalState::ALL {
            assert_eq!(end.as_str().parse(), Ok(end));
        }
        for outcome in AttemptOutcome::ALL {
            assert_eq!(outcome.as_str().parse(), Ok(outcome));
        }
    }

    #[test]
    fn the_texts_are_those_the_database_holds() {
        let texts: Vec<&str> = TaskState::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            texts,
            [
                "pending",
                "running",
                "retry",
                "complete",
                "error",
                "timeout",
                "cancelled"
            ]
        );
        let texts: Vec<&str> = AttemptOutcome::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(
            texts,
            [
                "retried",
                "lost",
                "requeued",
                "complete",
                "error",
                "timeout",
                "cancelled"
            ]
        );
    }

    #[test]
    fn only_the_four_ending_states_are_final() {
        let finals: Vec<TaskState> = TaskState::ALL
            .into_iter()
            .filter(|s| s.is_final())
            .collect();
        let ends: Vec<TaskState> = FinalState::ALL.into_iter().map(TaskState::from).collect();
        assert_eq!(finals, ends);
    }

    #[test]
    fn unknown_text_is_refused_naming_what_would_do() {
        let err = "runing".parse::<TaskState>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown task state \"runing\": expected one of pending, running, retry, \
             complete, error, timeout, cancelled"
        );
        let err = "running".parse::<FinalState>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown final task state \"running\": expected one of complete, error, \
             timeout, cancelled"
        );
        assert!(
            "".parse::<AttemptOutcome>().is_err(),
            "an open attempt has no outcome"
        );
    }
}
