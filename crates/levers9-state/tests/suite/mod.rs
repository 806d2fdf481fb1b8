//! The behaviour every `HotState` backend must show; each check gets a fresh,
//! empty state of its own. TTLs are short so that the suite stays fast, with
//! margins wide enough for a loaded two-core machine.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::stream::{BoxStream, StreamExt};
use levers9_state::HotState;
use tokio::time::{sleep, timeout, Instant};

// The checks on capacity records, sets and logs, listed in the macro with the rest.
mod records;
pub use records::*;
// The batch calls.
mod batch;
pub use batch::*;
// Claims.
mod claims;
pub use claims::*;
// Maps and capped queues.
mod maps;
pub use maps::*;

/// One `#[tokio::test]` per check below, each on a fresh state made by `$make().await`.
macro_rules! hot_state_suite {
    ($make:path) => {
        hot_state_suite!(@each $make;
            ping_answers,
            missing_key_is_none,
            value_is_readable_before_its_ttl,
            value_expires_after_its_ttl,
            set_replaces_the_value_and_the_ttl,
            set_if_absent_sets_only_once,
            set_if_absent_succeeds_after_expiry,
            delete_reports_whether_the_key_existed,
            concurrent_set_if_absent_has_one_winner,
            binary_values_round_trip,
            keys_leases_and_queues_are_separate,
            lease_is_exclusive_until_it_expires,
            lease_is_renewed_by_its_holder,
            release_by_another_holder_does_nothing,
            released_lease_can_be_taken_by_another,
            release_after_expiry_does_nothing,
            concurrent_acquire_lease_has_one_winner,
            queue_is_first_in_first_out,
            queue_len_counts_items,
            queues_are_independent,
            pop_waits_for_a_push,
            pop_times_out_on_an_empty_queue,
            pop_with_zero_wait_does_not_block,
            each_pushed_item_is_popped_once,
            subscriber_receives_messages_published_after_subscribing,
            two_subscribers_both_receive,
            subscriber_does_not_receive_other_channels,
            publish_without_subscribers_succeeds,
            resubscribing_after_dropping_a_subscription_works,
            reserve_takes_capacity_only_when_every_counter_fits,
            reserve_on_a_missing_record_fails,
            reserve_counts_a_counter_named_twice_once_summed,
            negative_amounts_are_rejected,
            release_gives_capacity_back,
            release_after_delete_does_not_recreate,
            concurrent_reserves_never_overcommit,
            set_capacity_overwrites_counters,
            delete_capacity_reports_whether_the_record_existed,
            sets_add_remove_and_list,
            log_keeps_the_last_entries_in_order,
            log_expires_after_its_ttl,
            log_append_renews_the_ttl,
            log_with_zero_max_entries_keeps_nothing,
            kinds_do_not_collide,
            reserve_batch_takes_each_in_order_and_reports_the_refused,
            reserve_batch_with_a_negative_amount_takes_nothing,
            concurrent_reserve_batches_never_overcommit,
            get_many_reads_each_key_in_order,
            write_batch_applies_every_write_in_order,
            pop_many_takes_up_to_max_oldest_first,
            claimed_items_stay_until_unclaimed,
            a_claim_waits_for_a_push,
            map_put_get_take_and_list,
            map_put_replaces_or_keeps_existing_values,
            map_put_over_the_limit_writes_nothing,
            concurrent_map_puts_never_pass_the_limit,
            push_capped_refuses_what_would_pass_the_limit,
            a_capped_push_wakes_a_waiting_pop,
            queue_delete_empties_the_queue,
            maps_do_not_collide_with_other_kinds,
        );
    };
    (@each $make:path; $($check:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                let state = $make().await;
                crate::suite::$check(&state).await;
            }
        )+
    };
}

// Wide margins on both sides: a check that a short-lived entry is still
// there runs right after it is written, and on a loaded 2-core machine
// "right after" has taken over 100 ms.
const SHORT_TTL: Duration = Duration::from_millis(600);
const PAST_SHORT_TTL: Duration = Duration::from_millis(1000);
const LONG_TTL: Duration = Duration::from_secs(30);
const RECEIVE_DEADLINE: Duration = Duration::from_secs(2);

async fn next_message(messages: &mut BoxStream<'static, Vec<u8>>) -> Vec<u8> {
    timeout(RECEIVE_DEADLINE, messages.next())
        .await
        .expect("no message within the deadline")
        .expect("the subscription ended")
}

pub async fn ping_answers(state: &dyn HotState) {
    state.ping().await.unwrap();
    assert!(["redis", "memory"].contains(&state.backend()));
}

pub async fn missing_key_is_none(state: &dyn HotState) {
    assert_eq!(state.get("nothing-here").await.unwrap(), None);
}

pub async fn value_is_readable_before_its_ttl(state: &dyn HotState) {
    state.set_with_ttl("k", b"v", LONG_TTL).await.unwrap();
    assert_eq!(state.get("k").await.unwrap(), Some(b"v".to_vec()));
}

pub async fn value_expires_after_its_ttl(state: &dyn HotState) {
    state.set_with_ttl("k", b"v", SHORT_TTL).await.unwrap();
    sleep(PAST_SHORT_TTL).await;
    assert_eq!(state.get("k").await.unwrap(), None);
}

pub async fn set_replaces_the_value_and_the_ttl(state: &dyn HotState) {
    state.set_with_ttl("k", b"first", SHORT_TTL).await.unwrap();
    state.set_with_ttl("k", b"second", LONG_TTL).await.unwrap();
    sleep(PAST_SHORT_TTL).await;
    assert_eq!(state.get("k").await.unwrap(), Some(b"second".to_vec()));
}

pub async fn set_if_absent_sets_only_once(state: &dyn HotState) {
    assert!(state.set_if_absent("k", b"first", LONG_TTL).await.unwrap());
    assert!(!state.set_if_absent("k", b"second", LONG_TTL).await.unwrap());
    assert_eq!(state.get("k").await.unwrap(), Some(b"first".to_vec()));
}

pub async fn set_if_absent_succeeds_after_expiry(state: &dyn HotState) {
    assert!(state.set_if_absent("k", b"first", SHORT_TTL).await.unwrap());
    sleep(PAST_SHORT_TTL).await;
    assert!(state.set_if_absent("k", b"second", LONG_TTL).await.unwrap());
    assert_eq!(state.get("k").await.unwrap(), Some(b"second".to_vec()));
}

pub async fn delete_reports_whether_the_key_existed(state: &dyn HotState) {
    assert!(!state.delete("k").await.unwrap());
    state.set_with_ttl("k", b"v", LONG_TTL).await.unwrap();
    assert!(state.delete("k").await.unwrap());
    assert_eq!(state.get("k").await.unwrap(), None);
    assert!(!state.delete("k").await.unwrap());
}

pub async fn concurrent_set_if_absent_has_one_winner(state: &dyn HotState) {
    let values: Vec<[u8; 1]> = (0..16u8).map(|i| [i]).collect();
    let attempts = values
        .iter()
        .map(|value| state.set_if_absent("k", value, LONG_TTL));
    let results = futures::future::join_all(attempts).await;
    let winners: Vec<u8> = results
        .into_iter()
        .enumerate()
        .filter(|(_, won)| *won.as_ref().unwrap())
        .map(|(i, _)| u8::try_from(i).unwrap())
        .collect();
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    assert_eq!(state.get("k").await.unwrap(), Some(winners));
}

pub async fn binary_values_round_trip(state: &dyn HotState) {
    let all_bytes: Vec<u8> = (0..=255).collect();
    for value in [all_bytes.as_slice(), b"".as_slice()] {
        state.set_with_ttl("k", value, LONG_TTL).await.unwrap();
        assert_eq!(state.get("k").await.unwrap().as_deref(), Some(value));
        state.push("q", value).await.unwrap();
        assert_eq!(
            state.pop("q", Duration::ZERO).await.unwrap().as_deref(),
            Some(value)
        );
        let mut messages = state.subscribe("c").await.unwrap();
        state.publish("c", value).await.unwrap();
        assert_eq!(next_message(&mut messages).await, value);
    }
}

pub async fn keys_leases_and_queues_are_separate(state: &dyn HotState) {
    state.set_with_ttl("x", b"value", LONG_TTL).await.unwrap();
    assert!(state.acquire_lease("x", "holder", LONG_TTL).await.unwrap());
    state.push("x", b"item").await.unwrap();
    assert_eq!(state.get("x").await.unwrap(), Some(b"value".to_vec()));
    assert_eq!(state.queue_len("x").await.unwrap(), 1);
    assert!(state.delete("x").await.unwrap());
    assert!(state.release_lease("x", "holder").await.unwrap());
    assert_eq!(
        state.pop("x", Duration::ZERO).await.unwrap(),
        Some(b"item".to_vec())
    );
}

pub async fn lease_is_exclusive_until_it_expires(state: &dyn HotState) {
    assert!(state.acquire_lease("l", "a", SHORT_TTL).await.unwrap());
    assert!(!state.acquire_lease("l", "b", SHORT_TTL).await.unwrap());
    sleep(PAST_SHORT_TTL).await;
    assert!(state.acquire_lease("l", "b", LONG_TTL).await.unwrap());
    assert!(!state.acquire_lease("l", "a", LONG_TTL).await.unwrap());
}

pub async fn lease_is_renewed_by_its_holder(state: &dyn HotState) {
    // Two steps each well within a ttl, together well past it.
    let ttl = Duration::from_millis(1600);
    let step = Duration::from_millis(1000);
    assert!(state.acquire_lease("l", "a", ttl).await.unwrap());
    sleep(step).await;
    assert!(state.acquire_lease("l", "a", ttl).await.unwrap());
    sleep(step).await;
    // Past the first ttl, within the renewed one.
    assert!(!state.acquire_lease("l", "b", ttl).await.unwrap());
}

pub async fn release_by_another_holder_does_nothing(state: &dyn HotState) {
    assert!(state.acquire_lease("l", "a", LONG_TTL).await.unwrap());
    assert!(!state.release_lease("l", "b").await.unwrap());
    assert!(!state.acquire_lease("l", "b", LONG_TTL).await.unwrap());
    assert!(state.acquire_lease("l", "a", LONG_TTL).await.unwrap());
}

pub async fn released_lease_can_be_taken_by_another(state: &dyn HotState) {
    assert!(state.acquire_lease("l", "a", LONG_TTL).await.unwrap());
    assert!(state.release_lease("l", "a").await.unwrap());
    assert!(!state.release_lease("l", "a").await.unwrap());
    assert!(state.acquire_lease("l", "b", LONG_TTL).await.unwrap());
}

pub async fn release_after_expiry_does_nothing(state: &dyn HotState) {
    assert!(state.acquire_lease("l", "a", SHORT_TTL).await.unwrap());
    sleep(PAST_SHORT_TTL).await;
    assert!(!state.release_lease("l", "a").await.unwrap());
}

pub async fn concurrent_acquire_lease_has_one_winner(state: &dyn HotState) {
    let holders: Vec<String> = (0..16).map(|i| format!("holder-{i}")).collect();
    let attempts = holders
        .iter()
        .map(|holder| state.acquire_lease("l", holder, LONG_TTL));
    let results = futures::future::join_all(attempts).await;
    let winners: Vec<&String> = holders
        .iter()
        .zip(results)
        .filter(|(_, won)| *won.as_ref().unwrap())
        .map(|(holder, _)| holder)
        .collect();
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    assert!(state.release_lease("l", winners[0]).await.unwrap());
}

pub async fn queue_is_first_in_first_out(state: &dyn HotState) {
    for item in [b"1", b"2", b"3"] {
        state.push("q", item).await.unwrap();
    }
    for item in [b"1", b"2", b"3"] {
        let wait = Duration::from_secs(1);
        assert_eq!(state.pop("q", wait).await.unwrap(), Some(item.to_vec()));
    }
    assert_eq!(state.pop("q", Duration::ZERO).await.unwrap(), None);
}

pub async fn queue_len_counts_items(state: &dyn HotState) {
    assert_eq!(state.queue_len("q").await.unwrap(), 0);
    state.push("q", b"1").await.unwrap();
    state.push("q", b"2").await.unwrap();
    assert_eq!(state.queue_len("q").await.unwrap(), 2);
    state.pop("q", Duration::ZERO).await.unwrap();
    assert_eq!(state.queue_len("q").await.unwrap(), 1);
}

pub async fn queues_are_independent(state: &dyn HotState) {
    state.push("a", b"for a").await.unwrap();
    assert_eq!(state.pop("b", Duration::ZERO).await.unwrap(), None);
    assert_eq!(state.queue_len("b").await.unwrap(), 0);
    assert_eq!(
        state.pop("a", Duration::ZERO).await.unwrap(),
        Some(b"for a".to_vec())
    );
}

pub async fn pop_waits_for_a_push(state: &dyn HotState) {
    let delay = Duration::from_millis(150);
    let started = Instant::now();
    let (popped, pushed) = tokio::join!(state.pop("q", Duration::from_secs(10)), async {
        sleep(delay).await;
        state.push("q", b"late").await
    });
    pushed.unwrap();
    assert_eq!(popped.unwrap(), Some(b"late".to_vec()));
    let elapsed = started.elapsed();
    assert!(elapsed >= delay, "returned after {elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(5),
        "returned after {elapsed:?}"
    );
}

pub async fn pop_times_out_on_an_empty_queue(state: &dyn HotState) {
    let wait = Duration::from_millis(200);
    let started = Instant::now();
    assert_eq!(state.pop("q", wait).await.unwrap(), None);
    let elapsed = started.elapsed();
    assert!(elapsed >= wait * 9 / 10, "returned after {elapsed:?}");
    assert!(
        elapsed < wait + Duration::from_secs(2),
        "returned after {elapsed:?}"
    );
}

pub async fn pop_with_zero_wait_does_not_block(state: &dyn HotState) {
    let started = Instant::now();
    assert_eq!(state.pop("q", Duration::ZERO).await.unwrap(), None);
    assert!(started.elapsed() < Duration::from_secs(1));
    state.push("q", b"ready").await.unwrap();
    assert_eq!(
        state.pop("q", Duration::ZERO).await.unwrap(),
        Some(b"ready".to_vec())
    );
}

pub async fn each_pushed_item_is_popped_once(state: &dyn HotState) {
    const ITEMS: usize = 40;
    let popped_count = AtomicUsize::new(0);
    let popper = || async {
        let mut mine = Vec::new();
        while popped_count.load(Ordering::SeqCst) < ITEMS {
            if let Some(item) = state.pop("q", Duration::from_millis(200)).await.unwrap() {
                popped_count.fetch_add(1, Ordering::SeqCst);
                mine.push(String::from_utf8(item).unwrap());
            }
        }
        mine
    };
    let pusher = async {
        for i in 0..ITEMS {
            state.push("q", format!("{i:02}").as_bytes()).await.unwrap();
            if i % 8 == 0 {
                sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let all = async {
        let (_, a, b, c, d) = tokio::join!(pusher, popper(), popper(), popper(), popper());
        [a, b, c, d].concat()
    };
    let popped = timeout(Duration::from_secs(20), all)
        .await
        .expect("some pushed items were never popped");
    let distinct: BTreeSet<&String> = popped.iter().collect();
    assert_eq!(popped.len(), ITEMS, "popped: {popped:?}");
    assert_eq!(distinct.len(), ITEMS, "popped: {popped:?}");
    assert_eq!(state.queue_len("q").await.unwrap(), 0);
}

pub async fn subscriber_receives_messages_published_after_subscribing(state: &dyn HotState) {
    let mut messages = state.subscribe("c").await.unwrap();
    for message in [b"1", b"2", b"3"] {
        state.publish("c", message).await.unwrap();
    }
    for message in [b"1", b"2", b"3"] {
        assert_eq!(next_message(&mut messages).await, message);
    }
}

pub async fn two_subscribers_both_receive(state: &dyn HotState) {
    let mut first = state.subscribe("c").await.unwrap();
    let mut second = state.subscribe("c").await.unwrap();
    state.publish("c", b"hello").await.unwrap();
    assert_eq!(next_message(&mut first).await, b"hello");
    assert_eq!(next_message(&mut second).await, b"hello");
}

pub async fn subscriber_does_not_receive_other_channels(state: &dyn HotState) {
    let mut messages = state.subscribe("a").await.unwrap();
    state.publish("b", b"for b").await.unwrap();
    state.publish("a", b"for a").await.unwrap();
    assert_eq!(next_message(&mut messages).await, b"for a");
}

pub async fn publish_without_subscribers_succeeds(state: &dyn HotState) {
    state.publish("nobody-listens", b"lost").await.unwrap();
}

pub async fn resubscribing_after_dropping_a_subscription_works(state: &dyn HotState) {
    let messages = state.subscribe("c").await.unwrap();
    drop(messages);
    state.publish("c", b"to nobody").await.unwrap();
    let mut messages = state.subscribe("c").await.unwrap();
    state.publish("c", b"again").await.unwrap();
    assert_eq!(next_message(&mut messages).await, b"again");
}
