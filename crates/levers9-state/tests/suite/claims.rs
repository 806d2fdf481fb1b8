//! Claims: what is taken from a queue stays findable until settled.

use std::time::Duration;

use levers9_state::HotState;
use tokio::time::{sleep, timeout};

use super::LONG_TTL;

pub async fn claimed_items_stay_until_unclaimed(state: &dyn HotState) {
    for i in 0..5u8 {
        state.push("q", &[i]).await.unwrap();
    }
    assert_eq!(
        state.claim("q", "held", Duration::ZERO).await.unwrap(),
        Some(vec![0])
    );
    assert_eq!(state.claim_many("q", "held", 2).await.unwrap(), [[1], [2]]);
    assert_eq!(state.queue_len("q").await.unwrap(), 2);
    assert_eq!(state.claimed("held").await.unwrap(), [[0], [1], [2]]);

    // Settled: 0 done, 2 back at the tail of the queue; 1 still held.
    state.unclaim("held", &[vec![0]], None).await.unwrap();
    state.unclaim("held", &[vec![2]], Some("q")).await.unwrap();
    assert_eq!(state.claimed("held").await.unwrap(), [[1]]);
    assert_eq!(state.pop_many("q", 10).await.unwrap(), [[3], [4], [2]]);

    // What a dead holder left is put back.
    let left = state.claimed("held").await.unwrap();
    state.unclaim("held", &left, Some("q")).await.unwrap();
    assert_eq!(state.claimed("held").await.unwrap(), Vec::<Vec<u8>>::new());
    assert_eq!(state.pop("q", Duration::ZERO).await.unwrap(), Some(vec![1]));
    assert_eq!(
        state.claim_many("q", "held", 3).await.unwrap(),
        Vec::<Vec<u8>>::new()
    );
}

pub async fn a_claim_waits_for_a_push(state: &dyn HotState) {
    assert_eq!(
        state
            .claim("q", "held", Duration::from_millis(50))
            .await
            .unwrap(),
        None
    );
    let (claimed, ()) = tokio::join!(
        timeout(LONG_TTL, state.claim("q", "held", LONG_TTL)),
        async {
            sleep(Duration::from_millis(100)).await;
            state.push("q", b"late").await.unwrap();
        }
    );
    assert_eq!(claimed.unwrap().unwrap(), Some(b"late".to_vec()));
    assert_eq!(state.claimed("held").await.unwrap(), [b"late"]);
    assert_eq!(state.queue_len("q").await.unwrap(), 0);
}
