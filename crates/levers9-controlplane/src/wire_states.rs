//! The one place the controlplane's states meet the proto's enums. Each
//! direction is an exhaustive `match` without a catch-all, so a state added
//! on either side does not compile until it is mapped here.
//!
//! From the wire, the unspecified value maps to `None`. prost's accessors
//! (`state()`) also read a number this version does not know (a newer
//! peer's) as unspecified, so `None` covers both, and each caller says
//! what it means where it reads one.

use levers9_api::v1;
use levers9_store::{AttemptOutcome, FinalState, MachineState, TaskState};

use crate::fleet::records::ContainerState;
use crate::functions::InputEnd;

/// How a task ended, as `TaskOutcome.state` carries it.
pub(crate) fn final_state(end: FinalState) -> v1::FinalTaskState {
    match end {
        FinalState::Complete => v1::FinalTaskState::Complete,
        FinalState::Error => v1::FinalTaskState::Error,
        FinalState::Timeout => v1::FinalTaskState::Timeout,
        FinalState::Cancelled => v1::FinalTaskState::Cancelled,
    }
}

/// How a `TaskOutcome` says its task ended; None when it does not say.
pub(crate) fn final_state_from_wire(wire: v1::FinalTaskState) -> Option<FinalState> {
    match wire {
        v1::FinalTaskState::Unspecified => None,
        v1::FinalTaskState::Complete => Some(FinalState::Complete),
        v1::FinalTaskState::Error => Some(FinalState::Error),
        v1::FinalTaskState::Timeout => Some(FinalState::Timeout),
        v1::FinalTaskState::Cancelled => Some(FinalState::Cancelled),
    }
}

/// Where a task stands, as `Task.state` carries it.
pub(crate) fn task_state(state: TaskState) -> v1::TaskState {
    match state {
        TaskState::Pending => v1::TaskState::Pending,
        TaskState::Running => v1::TaskState::Running,
        TaskState::Retry => v1::TaskState::Retry,
        TaskState::Ended(FinalState::Complete) => v1::TaskState::Complete,
        TaskState::Ended(FinalState::Error) => v1::TaskState::Error,
        TaskState::Ended(FinalState::Timeout) => v1::TaskState::Timeout,
        TaskState::Ended(FinalState::Cancelled) => v1::TaskState::Cancelled,
    }
}

/// How an attempt ended, as `TaskAttempt.outcome` carries it: unspecified
/// while it runs.
pub(crate) fn attempt_outcome(outcome: Option<AttemptOutcome>) -> v1::AttemptOutcome {
    match outcome {
        None => v1::AttemptOutcome::Unspecified,
        Some(AttemptOutcome::Retried) => v1::AttemptOutcome::Retried,
        Some(AttemptOutcome::Lost) => v1::AttemptOutcome::Lost,
        Some(AttemptOutcome::Requeued) => v1::AttemptOutcome::Requeued,
        Some(AttemptOutcome::Ended(FinalState::Complete)) => v1::AttemptOutcome::Complete,
        Some(AttemptOutcome::Ended(FinalState::Error)) => v1::AttemptOutcome::Error,
        Some(AttemptOutcome::Ended(FinalState::Timeout)) => v1::AttemptOutcome::Timeout,
        Some(AttemptOutcome::Ended(FinalState::Cancelled)) => v1::AttemptOutcome::Cancelled,
    }
}

/// How a worker's `TaskResult` says an input ended; None when it does not
/// say.
pub(crate) fn input_end(wire: v1::TaskResultState) -> Option<InputEnd> {
    match wire {
        v1::TaskResultState::Unspecified => None,
        v1::TaskResultState::Complete => Some(InputEnd::Complete),
        v1::TaskResultState::Error => Some(InputEnd::Error),
        v1::TaskResultState::Timeout => Some(InputEnd::Timeout),
        v1::TaskResultState::Lost => Some(InputEnd::Lost),
        v1::TaskResultState::Cancelled => Some(InputEnd::Cancelled),
    }
}

/// Where a container stands, as `Container.state` carries it.
pub(crate) fn container_state(state: ContainerState) -> v1::ContainerState {
    match state {
        ContainerState::Pending => v1::ContainerState::Pending,
        ContainerState::Scheduled => v1::ContainerState::Scheduled,
        ContainerState::Running => v1::ContainerState::Running,
        ContainerState::Exited => v1::ContainerState::Exited,
        ContainerState::Failed => v1::ContainerState::Failed,
        ContainerState::Lost => v1::ContainerState::Lost,
    }
}

/// The state a worker's `ContainerEvent` moves its container to; None when
/// it names none.
pub(crate) fn container_event_state(wire: v1::ContainerEventState) -> Option<ContainerState> {
    match wire {
        v1::ContainerEventState::Unspecified => None,
        v1::ContainerEventState::Running => Some(ContainerState::Running),
        v1::ContainerEventState::Exited => Some(ContainerState::Exited),
        v1::ContainerEventState::Failed => Some(ContainerState::Failed),
    }
}

/// Where a machine stands, as `Machine.state` carries it. `join_expired`:
/// its join token ran out, which makes a pending machine expired (a state
/// shown, not stored).
pub(crate) fn machine_state(state: MachineState, join_expired: bool) -> v1::MachineState {
    match state {
        MachineState::Pending if join_expired => v1::MachineState::Expired,
        MachineState::Pending => v1::MachineState::Pending,
        MachineState::Joined => v1::MachineState::Joined,
        MachineState::Draining => v1::MachineState::Draining,
    }
}

/// Whether a worker heartbeats, as `Worker.status` carries it.
pub(crate) fn worker_status(alive: bool) -> v1::WorkerStatus {
    if alive {
        v1::WorkerStatus::Ready
    } else {
        v1::WorkerStatus::Lost
    }
}

#[cfg(test)]
mod tests {
    use levers9_api::Words;

    use super::*;

    /// The wire's words are the texts the store and the records keep, so
    /// the REST JSON shows what it showed when the wire carried those texts.
    #[test]
    fn each_state_has_the_same_word_on_the_wire_as_at_rest() {
        for end in FinalState::ALL {
            assert_eq!(final_state(end).word(), end.as_str());
            assert_eq!(final_state_from_wire(final_state(end)), Some(end));
        }
        for state in TaskState::ALL {
            assert_eq!(task_state(state).word(), state.as_str());
        }
        for outcome in AttemptOutcome::ALL {
            assert_eq!(attempt_outcome(Some(outcome)).word(), outcome.as_str());
        }
        assert_eq!(attempt_outcome(None).word(), "");
        for state in ContainerState::ALL {
            assert_eq!(container_state(state).word(), state.as_str());
        }
        for state in MachineState::ALL {
            assert_eq!(machine_state(state, false).word(), state.as_str());
        }
        assert_eq!(machine_state(MachineState::Pending, true).word(), "expired");
        assert_eq!(machine_state(MachineState::Joined, true).word(), "joined");
    }

    #[test]
    fn what_workers_report_keeps_its_words() {
        for wire in [
            v1::TaskResultState::Complete,
            v1::TaskResultState::Error,
            v1::TaskResultState::Timeout,
            v1::TaskResultState::Lost,
            v1::TaskResultState::Cancelled,
        ] {
            assert_eq!(input_end(wire).map(InputEnd::as_str), Some(&*wire.word()));
        }
        for wire in [
            v1::ContainerEventState::Running,
            v1::ContainerEventState::Exited,
            v1::ContainerEventState::Failed,
        ] {
            let state = container_event_state(wire).map(ContainerState::as_str);
            assert_eq!(state, Some(&*wire.word()));
        }
    }

    #[test]
    fn an_unspecified_state_from_a_peer_names_nothing() {
        assert_eq!(final_state_from_wire(v1::FinalTaskState::Unspecified), None);
        assert_eq!(input_end(v1::TaskResultState::Unspecified), None);
        assert_eq!(
            container_event_state(v1::ContainerEventState::Unspecified),
            None
        );
        // A number no value names reads as unspecified.
        let newer = v1::TaskResult {
            state: 99,
            ..Default::default()
        };
        assert_eq!(input_end(newer.state()), None);
    }
}
