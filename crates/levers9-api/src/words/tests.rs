use serde_json::json;

use super::*;

#[test]
fn a_running_container_is_running_in_json_and_reads_back() {
    let container = v1::Container {
        container_id: "c-1".into(),
        state: v1::ContainerState::Running.into(),
        ..Default::default()
    };
    let json = serde_json::to_value(&container).unwrap();
    assert_eq!(json["state"], "running");
    let back: v1::Container = serde_json::from_value(json).unwrap();
    assert_eq!(back.state(), v1::ContainerState::Running);
    assert_eq!(back, container);
}

#[test]
fn every_state_field_keeps_the_words_it_had_as_text() {
    let task = v1::Task {
        state: v1::TaskState::Retry.into(),
        ..Default::default()
    };
    assert_eq!(serde_json::to_value(&task).unwrap()["state"], "retry");
    let outcome = v1::TaskOutcome {
        state: v1::FinalTaskState::Cancelled.into(),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_value(&outcome).unwrap()["state"],
        "cancelled"
    );
    let attempt = v1::TaskAttempt {
        outcome: v1::AttemptOutcome::Requeued.into(),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_value(&attempt).unwrap()["outcome"],
        "requeued"
    );
    let worker = v1::Worker {
        status: v1::WorkerStatus::Lost.into(),
        ..Default::default()
    };
    assert_eq!(serde_json::to_value(&worker).unwrap()["status"], "lost");
    let machine = v1::Machine {
        state: v1::MachineState::Expired.into(),
        ..Default::default()
    };
    assert_eq!(serde_json::to_value(&machine).unwrap()["state"], "expired");
    let event = v1::ContainerEvent {
        state: v1::ContainerEventState::Exited.into(),
        ..Default::default()
    };
    assert_eq!(serde_json::to_value(&event).unwrap()["state"], "exited");
    let result = v1::TaskResult {
        state: v1::TaskResultState::Lost.into(),
        ..Default::default()
    };
    assert_eq!(serde_json::to_value(&result).unwrap()["state"], "lost");
}

#[test]
fn an_attempt_that_still_runs_has_an_empty_outcome() {
    let json = serde_json::to_value(v1::TaskAttempt::default()).unwrap();
    assert_eq!(json["outcome"], "");
    let back: v1::TaskAttempt = serde_json::from_value(json).unwrap();
    assert_eq!(back.outcome(), v1::AttemptOutcome::Unspecified);
    let absent: v1::TaskAttempt = serde_json::from_value(json!({})).unwrap();
    assert_eq!(absent.outcome, 0);
}

#[test]
fn every_value_reads_back_from_its_word() {
    fn check<T: Words + PartialEq + std::fmt::Debug>(words: &[&str]) {
        let known: Vec<T> = (0..).map_while(|n| T::try_from(n).ok()).collect();
        let shown: Vec<String> = known.iter().map(|v| v.word()).collect();
        assert_eq!(shown, words);
        for value in known {
            assert_eq!(T::from_word(&value.word()), Some(value));
        }
    }
    check::<v1::FinalTaskState>(&["", "complete", "error", "timeout", "cancelled"]);
    check::<v1::TaskState>(&[
        "",
        "pending",
        "running",
        "retry",
        "complete",
        "error",
        "timeout",
        "cancelled",
    ]);
    check::<v1::AttemptOutcome>(&[
        "",
        "retried",
        "lost",
        "requeued",
        "complete",
        "error",
        "timeout",
        "cancelled",
    ]);
    check::<v1::TaskResultState>(&["", "complete", "error", "timeout", "lost", "cancelled"]);
    check::<v1::ContainerEventState>(&["", "running", "exited", "failed"]);
    check::<v1::WorkerStatus>(&["", "ready", "lost"]);
    check::<v1::ContainerState>(&[
        "",
        "pending",
        "scheduled",
        "running",
        "exited",
        "failed",
        "lost",
    ]);
    check::<v1::MachineState>(&["", "pending", "joined", "draining", "expired"]);
}

#[test]
fn only_lower_case_words_name_values() {
    assert_eq!(v1::ContainerState::from_word("RUNNING"), None);
    assert_eq!(v1::ContainerState::from_word("Running"), None);
    assert_eq!(v1::ContainerState::from_word("unspecified"), None);
    assert_eq!(
        v1::ContainerState::from_word("CONTAINER_STATE_RUNNING"),
        None
    );
    assert_eq!(v1::ContainerState::from_word("runing"), None);
}

#[test]
fn a_number_that_names_no_value_shows_as_itself() {
    assert_eq!(v1::ContainerState::word_of(3), "running");
    assert_eq!(v1::ContainerState::word_of(0), "");
    assert_eq!(v1::ContainerState::word_of(99), "99");
}

#[test]
fn json_reads_numbers_too_but_refuses_what_names_no_value() {
    let by_number: v1::Container = serde_json::from_value(json!({ "state": 3 })).unwrap();
    assert_eq!(by_number.state(), v1::ContainerState::Running);
    let err = serde_json::from_value::<v1::Container>(json!({ "state": "runing" })).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid value: string \"runing\", expected one of \"\", pending, scheduled, running, \
         exited, failed, lost"
    );
    let err = serde_json::from_value::<v1::Container>(json!({ "state": 99 })).unwrap_err();
    assert!(err.to_string().contains("integer `99`"), "{err}");
    let unknown = v1::Container {
        state: 99,
        ..Default::default()
    };
    let err = serde_json::to_value(&unknown).unwrap_err();
    assert_eq!(
        err.to_string(),
        "99 is no value of the enum whose names start CONTAINER_STATE_"
    );
}
