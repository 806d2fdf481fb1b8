//! The shared suite, and what only the in-process backend promises, against `MemoryState`.

#[macro_use]
mod suite;

use std::time::Duration;

use futures::StreamExt;
use levers9_state::{Kv, MemoryState, PubSub};

async fn memory_state() -> MemoryState {
    MemoryState::new()
}

hot_state_suite!(memory_state);

#[tokio::test]
async fn clones_share_one_state() {
    let state = MemoryState::new();
    let clone = state.clone();
    clone
        .set_with_ttl("k", b"v", Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(state.get("k").await.unwrap(), Some(b"v".to_vec()));
}

#[tokio::test]
async fn lagging_subscriber_skips_lost_messages() {
    let state = MemoryState::new();
    let mut messages = state.subscribe("c").await.unwrap();
    let published: u32 = 3000;
    for i in 0..published {
        state.publish("c", &i.to_be_bytes()).await.unwrap();
    }
    let first = messages.next().await.unwrap();
    let first = u32::from_be_bytes(first.try_into().unwrap());
    assert!(first > 0, "the oldest messages should have been lost");
    for expected in first + 1..published {
        let message = messages.next().await.unwrap();
        assert_eq!(u32::from_be_bytes(message.try_into().unwrap()), expected);
    }
    state.publish("c", b"after").await.unwrap();
    assert_eq!(messages.next().await.unwrap(), b"after");
}
