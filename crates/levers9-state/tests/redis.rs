//! The shared suite, and what only the Redis backend promises, against a real Redis.
//!
//! Each test namespaces its keys with a fresh prefix, so tests run in parallel
//! on one server.

#[macro_use]
mod suite;

use std::time::Duration;

use levers9_state::{Capacity, Kv, Leases, Queues, RedisState, Reservation, Reserve, StateError};
use tokio::time::Instant;

fn redis_url() -> String {
    std::env::var("LEVERS9_TEST_REDIS_URL").unwrap_or_else(|_| {
        panic!(
            "LEVERS9_TEST_REDIS_URL is not set: run the tests through \
             `scripts/test-servers.sh cargo test -p levers9-state`, \
             which starts a throwaway Redis"
        )
    })
}

fn unique_prefix() -> String {
    format!("levers9-test:{}:", uuid::Uuid::new_v4())
}

/// "host:port" of the test server, from its redis://host:port URL.
fn redis_addr() -> String {
    let url = redis_url();
    let rest = url.strip_prefix("redis://").expect("a redis:// URL");
    let addr = rest.rsplit('@').next().unwrap_or(rest);
    addr.split('/').next().unwrap_or(addr).to_owned()
}

async fn redis_state() -> RedisState {
    RedisState::connect(&redis_url(), &unique_prefix())
        .await
        .expect("connect to the test Redis")
}

hot_state_suite!(redis_state);

#[tokio::test]
async fn connect_with_uses_the_address_and_db() {
    let prefix = unique_prefix();
    let db1 = RedisState::connect_with(&[redis_addr()], None, 1, &prefix)
        .await
        .unwrap();
    let db0 = RedisState::connect_with(&[redis_addr()], None, 0, &prefix)
        .await
        .unwrap();
    let ttl = Duration::from_secs(30);
    db1.set_with_ttl("k", b"in db 1", ttl).await.unwrap();
    assert_eq!(db1.get("k").await.unwrap(), Some(b"in db 1".to_vec()));
    assert_eq!(db0.get("k").await.unwrap(), None);
    let by_url = RedisState::connect(&format!("{}/1", redis_url()), &prefix)
        .await
        .unwrap();
    assert_eq!(by_url.get("k").await.unwrap(), Some(b"in db 1".to_vec()));
}

#[tokio::test]
async fn connect_with_needs_an_address() {
    let result = RedisState::connect_with(&[], None, 0, &unique_prefix()).await;
    assert!(matches!(result, Err(StateError::NoAddress)));
    let result = RedisState::connect_with(&["no-port".to_owned()], None, 0, "p:").await;
    assert!(matches!(result, Err(StateError::InvalidAddress(_))));
}

#[tokio::test]
async fn a_rejected_password_is_not_in_the_error() {
    let password = "s3cret-that-must-not-leak";
    let result =
        RedisState::connect_with(&[redis_addr()], Some(password), 0, &unique_prefix()).await;
    // The test server has no password, so Redis refuses the AUTH.
    let error = result
        .err()
        .expect("AUTH against a server without a password");
    assert!(!error.to_string().contains(password), "{error}");
    assert!(!format!("{error:?}").contains(password), "{error:?}");
}

#[tokio::test]
async fn connecting_to_nothing_reports_the_real_error_quickly() {
    let started = Instant::now();
    let result = RedisState::connect("redis://127.0.0.1:1", &unique_prefix()).await;
    assert!(
        matches!(result, Err(StateError::Redis(_))),
        "{:?}",
        result.err()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn keys_are_namespaced_by_the_prefix() {
    let url = redis_url();
    let one = RedisState::connect(&url, &unique_prefix()).await.unwrap();
    let other = RedisState::connect(&url, &unique_prefix()).await.unwrap();
    let ttl = Duration::from_secs(30);
    one.set_with_ttl("k", b"one", ttl).await.unwrap();
    one.push("q", b"one").await.unwrap();
    assert_eq!(other.get("k").await.unwrap(), None);
    assert_eq!(other.queue_len("q").await.unwrap(), 0);
    assert!(other.acquire_lease("l", "other", ttl).await.unwrap());
    assert!(one.acquire_lease("l", "one", ttl).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserves_from_two_replicas_never_overcommit() {
    // Two connections, as two controlplane replicas would have: the Lua
    // script, not a shared client, is what keeps the reservation atomic.
    let prefix = unique_prefix();
    let one = RedisState::connect(&redis_url(), &prefix).await.unwrap();
    let other = RedisState::connect(&redis_url(), &prefix).await.unwrap();
    one.set_capacity("w", &[("cpu", 1000)]).await.unwrap();
    let attempts = (0..20).map(|i| {
        let replica = if i % 2 == 0 { &one } else { &other };
        replica.try_reserve("w", &[("cpu", 100)])
    });
    let results = futures::future::join_all(attempts).await;
    let won = results
        .into_iter()
        .filter(|won| *won.as_ref().unwrap())
        .count();
    assert_eq!(won, 10);
    assert_eq!(
        other.get_capacity("w").await.unwrap(),
        Some(vec![("cpu".to_owned(), 0)])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserve_batches_from_two_replicas_never_overcommit() {
    // As two schedulers deciding on the same stale picture: each sends a
    // batch aimed at the same two workers; the script keeps each
    // reservation atomic, and the refused ones say what is left.
    let prefix = unique_prefix();
    let one = RedisState::connect(&redis_url(), &prefix).await.unwrap();
    let other = RedisState::connect(&redis_url(), &prefix).await.unwrap();
    one.set_capacity("a", &[("cpu", 1000)]).await.unwrap();
    one.set_capacity("b", &[("cpu", 1000)]).await.unwrap();
    let amounts = [("cpu", 300)];
    let batch: Vec<Reserve> = ["a", "b", "a", "b", "a", "b", "a", "b"]
        .into_iter()
        .map(|key| Reserve {
            key,
            amounts: &amounts,
        })
        .collect();
    let (first, second) = tokio::join!(
        one.try_reserve_batch(&batch),
        other.try_reserve_batch(&batch)
    );
    let results: Vec<Reservation> = first.unwrap().into_iter().chain(second.unwrap()).collect();
    assert_eq!(results.iter().filter(|r| r.is_reserved()).count(), 6);
    for refused in results.iter().filter(|r| !r.is_reserved()) {
        assert_eq!(
            refused,
            &Reservation::Refused(Some(vec![("cpu".to_owned(), 100)]))
        );
    }
    for key in ["a", "b"] {
        assert_eq!(
            other.get_capacity(key).await.unwrap(),
            Some(vec![("cpu".to_owned(), 100)])
        );
    }
}
