//! The checks on capacity records, sets and logs.

use levers9_state::{HotState, StateError};
use tokio::time::sleep;

use super::{LONG_TTL, PAST_SHORT_TTL, SHORT_TTL};

fn counters(pairs: &[(&str, i64)]) -> Option<Vec<(String, i64)>> {
    Some(
        pairs
            .iter()
            .map(|&(name, n)| (name.to_owned(), n))
            .collect(),
    )
}

pub async fn reserve_takes_capacity_only_when_every_counter_fits(state: &dyn HotState) {
    state
        .set_capacity("w", &[("cpu", 1000), ("mem", 512)])
        .await
        .unwrap();
    // mem fits, cpu does not: nothing is taken.
    assert!(!state
        .try_reserve("w", &[("mem", 100), ("cpu", 1001)])
        .await
        .unwrap());
    // A counter the record lacks counts as 0.
    assert!(!state.try_reserve("w", &[("gpu", 1)]).await.unwrap());
    assert_eq!(
        state.get_capacity("w").await.unwrap(),
        counters(&[("cpu", 1000), ("mem", 512)])
    );
    assert!(state
        .try_reserve("w", &[("cpu", 1000), ("mem", 500)])
        .await
        .unwrap());
    assert_eq!(
        state.get_capacity("w").await.unwrap(),
        counters(&[("cpu", 0), ("mem", 12)])
    );
    assert!(!state.try_reserve("w", &[("cpu", 1)]).await.unwrap());
    assert!(state.try_reserve("w", &[("gpu", 0)]).await.unwrap());
}

pub async fn reserve_on_a_missing_record_fails(state: &dyn HotState) {
    assert!(!state.try_reserve("w", &[("cpu", 1)]).await.unwrap());
    assert!(!state.try_reserve("w", &[("cpu", 0)]).await.unwrap());
    assert!(!state.try_reserve("w", &[]).await.unwrap());
    assert_eq!(state.get_capacity("w").await.unwrap(), None);
}

pub async fn reserve_counts_a_counter_named_twice_once_summed(state: &dyn HotState) {
    state.set_capacity("w", &[("cpu", 1000)]).await.unwrap();
    assert!(!state
        .try_reserve("w", &[("cpu", 600), ("cpu", 600)])
        .await
        .unwrap());
    assert!(state
        .try_reserve("w", &[("cpu", 400), ("cpu", 600)])
        .await
        .unwrap());
    assert_eq!(
        state.get_capacity("w").await.unwrap(),
        counters(&[("cpu", 0)])
    );
}

pub async fn negative_amounts_are_rejected(state: &dyn HotState) {
    state.set_capacity("w", &[("cpu", 1000)]).await.unwrap();
    let reserved = state.try_reserve("w", &[("cpu", -5)]).await;
    assert!(matches!(
        reserved,
        Err(StateError::NegativeAmount { amount: -5, .. })
    ));
    let released = state.release("w", &[("cpu", 1), ("mem", -1)]).await;
    assert!(matches!(
        released,
        Err(StateError::NegativeAmount { amount: -1, .. })
    ));
    assert_eq!(
        state.get_capacity("w").await.unwrap(),
        counters(&[("cpu", 1000)])
    );
}

pub async fn release_gives_capacity_back(state: &dyn HotState) {
    state
        .set_capacity("w", &[("cpu", 1000), ("mem", 512)])
        .await
        .unwrap();
    let amounts = [("cpu", 300), ("mem", 512)];
    assert!(state.try_reserve("w", &amounts).await.unwrap());
    assert!(!state.try_reserve("w", &[("mem", 1)]).await.unwrap());
    state.release("w", &amounts).await.unwrap();
    assert_eq!(
        state.get_capacity("w").await.unwrap(),
        counters(&[("cpu", 1000), ("mem", 512)])
    );
    assert!(state.try_reserve("w", &[("mem", 512)]).await.unwrap());
}

pub async fn release_after_delete_does_not_recreate(state: &dyn HotState) {
    state.set_capacity("w", &[("cpu", 1000)]).await.unwrap();
    assert!(state.try_reserve("w", &[("cpu", 100)]).await.unwrap());
    assert!(state.delete_capacity("w").await.unwrap());
    state.release("w", &[("cpu", 100)]).await.unwrap();
    assert_eq!(state.get_capacity("w").await.unwrap(), None);
    assert!(!state.try_reserve("w", &[("cpu", 1)]).await.unwrap());
}

pub async fn concurrent_reserves_never_overcommit(state: &dyn HotState) {
    state
        .set_capacity("w", &[("cpu", 1000), ("mem", 4096)])
        .await
        .unwrap();
    let attempts = (0..20).map(|_| state.try_reserve("w", &[("cpu", 100), ("mem", 1)]));
    let results = futures::future::join_all(attempts).await;
    let won = results
        .into_iter()
        .filter(|won| *won.as_ref().unwrap())
        .count();
    assert_eq!(won, 10);
    assert_eq!(
        state.get_capacity("w").await.unwrap(),
        counters(&[("cpu", 0), ("mem", 4086)])
    );
}

pub async fn set_capacity_overwrites_counters(state: &dyn HotState) {
    state
        .set_capacity("w", &[("cpu", 1000), ("mem", 512)])
        .await
        .unwrap();
    assert!(state.try_reserve("w", &[("cpu", 700)]).await.unwrap());
    // Named counters are overwritten (not added to), the others are kept.
    state
        .set_capacity("w", &[("cpu", 2000), ("gpu", 1)])
        .await
        .unwrap();
    assert_eq!(
        state.get_capacity("w").await.unwrap(),
        counters(&[("cpu", 2000), ("gpu", 1), ("mem", 512)])
    );
    // No counters, no record.
    state.set_capacity("empty", &[]).await.unwrap();
    assert_eq!(state.get_capacity("empty").await.unwrap(), None);
}

pub async fn delete_capacity_reports_whether_the_record_existed(state: &dyn HotState) {
    assert!(!state.delete_capacity("w").await.unwrap());
    state.set_capacity("w", &[("cpu", 1)]).await.unwrap();
    assert!(state.delete_capacity("w").await.unwrap());
    assert!(!state.delete_capacity("w").await.unwrap());
}

pub async fn sets_add_remove_and_list(state: &dyn HotState) {
    assert_eq!(
        state.set_members("pool").await.unwrap(),
        Vec::<String>::new()
    );
    assert!(!state.set_remove("pool", "w1").await.unwrap());
    for member in ["w3", "w1", "w2"] {
        assert!(state.set_add("pool", member).await.unwrap());
    }
    assert!(!state.set_add("pool", "w1").await.unwrap());
    assert_eq!(state.set_members("pool").await.unwrap(), ["w1", "w2", "w3"]);
    assert!(state.set_remove("pool", "w2").await.unwrap());
    assert!(!state.set_remove("pool", "w2").await.unwrap());
    assert_eq!(state.set_members("pool").await.unwrap(), ["w1", "w3"]);
    assert_eq!(
        state.set_members("other").await.unwrap(),
        Vec::<String>::new()
    );
    assert!(state.set_remove("pool", "w1").await.unwrap());
    assert!(state.set_remove("pool", "w3").await.unwrap());
    assert_eq!(
        state.set_members("pool").await.unwrap(),
        Vec::<String>::new()
    );
    assert!(state.set_add("pool", "w1").await.unwrap());
}

pub async fn log_keeps_the_last_entries_in_order(state: &dyn HotState) {
    assert_eq!(state.log_range("l").await.unwrap(), Vec::<Vec<u8>>::new());
    for i in 0..5u8 {
        state.log_append("l", &[i], 3, LONG_TTL).await.unwrap();
    }
    assert_eq!(state.log_range("l").await.unwrap(), [[2], [3], [4]]);
    // A smaller bound trims what is already there.
    state.log_append("l", &[5], 2, LONG_TTL).await.unwrap();
    assert_eq!(state.log_range("l").await.unwrap(), [[4], [5]]);
    let all_bytes: Vec<u8> = (0..=255).collect();
    state
        .log_append("l", &all_bytes, 2, LONG_TTL)
        .await
        .unwrap();
    state.log_append("l", b"", 2, LONG_TTL).await.unwrap();
    assert_eq!(state.log_range("l").await.unwrap(), [all_bytes, Vec::new()]);
}

pub async fn log_expires_after_its_ttl(state: &dyn HotState) {
    state.log_append("l", b"1", 10, SHORT_TTL).await.unwrap();
    assert_eq!(state.log_range("l").await.unwrap(), [b"1"]);
    sleep(PAST_SHORT_TTL).await;
    assert_eq!(state.log_range("l").await.unwrap(), Vec::<Vec<u8>>::new());
    // An expired log starts afresh.
    state.log_append("l", b"2", 10, LONG_TTL).await.unwrap();
    assert_eq!(state.log_range("l").await.unwrap(), [b"2"]);
}

pub async fn log_append_renews_the_ttl(state: &dyn HotState) {
    state.log_append("l", b"1", 10, SHORT_TTL).await.unwrap();
    state.log_append("l", b"2", 10, LONG_TTL).await.unwrap();
    sleep(PAST_SHORT_TTL).await;
    assert_eq!(state.log_range("l").await.unwrap(), [b"1", b"2"]);
}

pub async fn log_with_zero_max_entries_keeps_nothing(state: &dyn HotState) {
    state.log_append("l", b"1", 10, LONG_TTL).await.unwrap();
    state.log_append("l", b"2", 0, LONG_TTL).await.unwrap();
    assert_eq!(state.log_range("l").await.unwrap(), Vec::<Vec<u8>>::new());
}

pub async fn kinds_do_not_collide(state: &dyn HotState) {
    state.set_with_ttl("x", b"value", LONG_TTL).await.unwrap();
    state.set_capacity("x", &[("cpu", 1)]).await.unwrap();
    assert!(state.set_add("x", "member").await.unwrap());
    state.log_append("x", b"line", 10, LONG_TTL).await.unwrap();
    state.push("x", b"item").await.unwrap();
    assert_eq!(state.get("x").await.unwrap(), Some(b"value".to_vec()));
    assert_eq!(
        state.get_capacity("x").await.unwrap(),
        counters(&[("cpu", 1)])
    );
    assert_eq!(state.set_members("x").await.unwrap(), ["member"]);
    assert_eq!(state.log_range("x").await.unwrap(), [b"line"]);
    assert_eq!(state.queue_len("x").await.unwrap(), 1);
    assert!(state.delete("x").await.unwrap());
    assert!(state.delete_capacity("x").await.unwrap());
    assert_eq!(state.set_members("x").await.unwrap(), ["member"]);
    assert_eq!(state.log_range("x").await.unwrap(), [b"line"]);
}
