//! How a worker says one input ended: the `state` of its `TaskResult`
//! (read from the wire in [`crate::wire_states`]).

use serde::{Deserialize, Serialize};

/// How one input ended in its container, as its worker reports it. Not
/// how the task ended: the dispatcher decides that (a failed input may run
/// again, a lost one does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputEnd {
    /// It returned a value.
    Complete,
    /// It raised, or its runner failed it.
    Error,
    /// It ran past the stub's time limit.
    Timeout,
    /// Dropped before it started, after a CancelInput.
    Cancelled,
    /// It never ran (its container was gone, or its input could not be
    /// read): it goes back to the queue without using an attempt.
    Lost,
}

impl InputEnd {
    /// Every end, in declaration order.
    #[cfg(test)]
    pub(crate) const ALL: [InputEnd; 5] = [
        InputEnd::Complete,
        InputEnd::Error,
        InputEnd::Timeout,
        InputEnd::Cancelled,
        InputEnd::Lost,
    ];

    /// As the dispatcher's events carry it (and the REST JSON shows the
    /// worker's `TaskResult`).
    pub fn as_str(self) -> &'static str {
        match self {
            InputEnd::Complete => "complete",
            InputEnd::Error => "error",
            InputEnd::Timeout => "timeout",
            InputEnd::Cancelled => "cancelled",
            InputEnd::Lost => "lost",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_events_carry_the_workers_text() {
        for end in InputEnd::ALL {
            let json = serde_json::to_string(&end).unwrap();
            assert_eq!(json, format!("\"{}\"", end.as_str()));
        }
    }
}
