//! Maps and capped queues: what Dicts and Queues are made of.

use std::time::Duration;

use levers9_state::{HotState, MapPut};
use tokio::time::{sleep, timeout};

use super::LONG_TTL;

fn entry(field: &str, value: &str) -> (Vec<u8>, Vec<u8>) {
    (field.as_bytes().to_vec(), value.as_bytes().to_vec())
}

pub async fn map_put_get_take_and_list(state: &dyn HotState) {
    assert_eq!(state.map_get("m", b"a").await.unwrap(), None);
    assert_eq!(state.map_len("m").await.unwrap(), 0);
    let put = state
        .map_put("m", &[entry("b", "2"), entry("a", "1")], 10, false)
        .await
        .unwrap();
    assert_eq!(put, MapPut::Stored { added: 2 });
    assert_eq!(state.map_get("m", b"a").await.unwrap(), Some(b"1".to_vec()));
    assert_eq!(state.map_len("m").await.unwrap(), 2);
    assert_eq!(state.map_fields("m").await.unwrap(), [b"a", b"b"]);
    assert_eq!(
        state.map_entries("m").await.unwrap(),
        [entry("a", "1"), entry("b", "2")]
    );
    assert_eq!(
        state.map_take("m", b"a").await.unwrap(),
        Some(b"1".to_vec())
    );
    assert_eq!(state.map_take("m", b"a").await.unwrap(), None);
    assert_eq!(state.map_len("m").await.unwrap(), 1);
    assert!(state.map_delete("m").await.unwrap());
    assert!(!state.map_delete("m").await.unwrap());
    assert_eq!(state.map_entries("m").await.unwrap(), Vec::new());
}

pub async fn map_put_replaces_or_keeps_existing_values(state: &dyn HotState) {
    state
        .map_put("m", &[entry("a", "1")], 10, false)
        .await
        .unwrap();
    let kept = state
        .map_put("m", &[entry("a", "kept?"), entry("b", "2")], 10, true)
        .await
        .unwrap();
    assert_eq!(kept, MapPut::Stored { added: 1 });
    assert_eq!(state.map_get("m", b"a").await.unwrap(), Some(b"1".to_vec()));
    let replaced = state
        .map_put("m", &[entry("a", "new")], 10, false)
        .await
        .unwrap();
    assert_eq!(replaced, MapPut::Stored { added: 0 });
    assert_eq!(
        state.map_get("m", b"a").await.unwrap(),
        Some(b"new".to_vec())
    );
}

pub async fn map_put_over_the_limit_writes_nothing(state: &dyn HotState) {
    state
        .map_put("m", &[entry("a", "1"), entry("b", "2")], 3, false)
        .await
        .unwrap();
    // Two new fields would make four: refused as a whole.
    let full = state
        .map_put(
            "m",
            &[entry("a", "x"), entry("c", "3"), entry("d", "4")],
            3,
            false,
        )
        .await
        .unwrap();
    assert_eq!(full, MapPut::Full { len: 2 });
    assert_eq!(state.map_get("m", b"a").await.unwrap(), Some(b"1".to_vec()));
    assert_eq!(state.map_len("m").await.unwrap(), 2);
    // Replacing fields already there never counts against the limit, and
    // a field named twice is one field.
    let fits = state
        .map_put(
            "m",
            &[entry("a", "x"), entry("c", "3"), entry("c", "4")],
            3,
            false,
        )
        .await
        .unwrap();
    assert_eq!(fits, MapPut::Stored { added: 1 });
    assert_eq!(state.map_get("m", b"c").await.unwrap(), Some(b"4".to_vec()));
}

pub async fn concurrent_map_puts_never_pass_the_limit(state: &dyn HotState) {
    let puts = (0..20).map(|i| {
        let field = format!("f{i}");
        async move {
            state
                .map_put("m", &[(field.into_bytes(), vec![1])], 5, false)
                .await
                .unwrap()
        }
    });
    let results = futures::future::join_all(puts).await;
    let stored = results
        .iter()
        .filter(|r| matches!(r, MapPut::Stored { .. }))
        .count();
    assert_eq!(stored, 5);
    assert_eq!(state.map_len("m").await.unwrap(), 5);
}

pub async fn push_capped_refuses_what_would_pass_the_limit(state: &dyn HotState) {
    let items = |n: u8| (0..n).map(|i| vec![i]).collect::<Vec<_>>();
    assert_eq!(state.push_capped("q", &items(3), 4).await.unwrap(), Some(3));
    assert_eq!(state.push_capped("q", &items(2), 4).await.unwrap(), None);
    assert_eq!(state.queue_len("q").await.unwrap(), 3);
    assert_eq!(state.push_capped("q", &items(1), 4).await.unwrap(), Some(4));
    assert_eq!(state.push_capped("q", &[], 4).await.unwrap(), Some(4));
    assert_eq!(state.pop_many("q", 10).await.unwrap(), [[0], [1], [2], [0]]);
}

pub async fn a_capped_push_wakes_a_waiting_pop(state: &dyn HotState) {
    let (popped, ()) = tokio::join!(timeout(LONG_TTL, state.pop("q", LONG_TTL)), async {
        sleep(Duration::from_millis(100)).await;
        state.push_capped("q", &[b"x".to_vec()], 10).await.unwrap();
    });
    assert_eq!(popped.unwrap().unwrap(), Some(b"x".to_vec()));
}

pub async fn queue_delete_empties_the_queue(state: &dyn HotState) {
    assert_eq!(state.queue_delete("q").await.unwrap(), 0);
    state.push("q", b"a").await.unwrap();
    state.push("q", b"b").await.unwrap();
    assert_eq!(state.queue_delete("q").await.unwrap(), 2);
    assert_eq!(state.queue_len("q").await.unwrap(), 0);
    state.push("q", b"c").await.unwrap();
    assert_eq!(
        state.pop("q", Duration::ZERO).await.unwrap(),
        Some(b"c".to_vec())
    );
}

pub async fn maps_do_not_collide_with_other_kinds(state: &dyn HotState) {
    state.set_with_ttl("x", b"value", LONG_TTL).await.unwrap();
    state.push("x", b"item").await.unwrap();
    assert!(state.set_add("x", "member").await.unwrap());
    state
        .map_put("x", &[entry("f", "v")], 1, false)
        .await
        .unwrap();
    assert_eq!(state.get("x").await.unwrap(), Some(b"value".to_vec()));
    assert_eq!(state.queue_len("x").await.unwrap(), 1);
    assert_eq!(state.set_members("x").await.unwrap(), ["member"]);
    assert!(state.map_delete("x").await.unwrap());
    assert_eq!(state.get("x").await.unwrap(), Some(b"value".to_vec()));
    assert_eq!(state.queue_len("x").await.unwrap(), 1);
}
