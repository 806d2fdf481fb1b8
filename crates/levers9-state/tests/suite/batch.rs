//! The checks on the batch calls: many reservations, reads, writes or pops
//! in one step.

use levers9_state::{HotState, Reservation, Reserve, StateError, Write};
use tokio::time::sleep;

use super::{LONG_TTL, PAST_SHORT_TTL, SHORT_TTL};

fn reserve<'a>(key: &'a str, amounts: &'a [(&'a str, i64)]) -> Reserve<'a> {
    Reserve { key, amounts }
}

fn refused(pairs: &[(&str, i64)]) -> Reservation {
    Reservation::Refused(Some(
        pairs.iter().map(|&(n, v)| (n.to_owned(), v)).collect(),
    ))
}

pub async fn reserve_batch_takes_each_in_order_and_reports_the_refused(state: &dyn HotState) {
    state
        .set_capacity("a", &[("cpu", 1000), ("mem", 512)])
        .await
        .unwrap();
    state
        .set_capacity("b", &[("cpu", 500), ("gpu:L40S", 1)])
        .await
        .unwrap();
    let results = state
        .try_reserve_batch(&[
            reserve("a", &[("cpu", 600), ("mem", 100)]),
            // Sees what the first took: 400 left.
            reserve("a", &[("cpu", 600)]),
            reserve("b", &[("cpu", 500), ("gpu:L40S", 1)]),
            reserve("missing", &[("cpu", 1)]),
            // A refusal does not stop the rest.
            reserve("a", &[("cpu", 400), ("mem", 412)]),
            reserve("b", &[("gpu:L40S", 1)]),
        ])
        .await
        .unwrap();
    assert_eq!(
        results,
        [
            Reservation::Reserved,
            refused(&[("cpu", 400), ("mem", 412)]),
            Reservation::Reserved,
            Reservation::Refused(None),
            Reservation::Reserved,
            refused(&[("cpu", 0), ("gpu:L40S", 0)]),
        ]
    );
    assert_eq!(
        state.get_capacity("a").await.unwrap(),
        Some(vec![("cpu".to_owned(), 0), ("mem".to_owned(), 0)])
    );
    assert_eq!(state.get_capacity("missing").await.unwrap(), None);
    assert_eq!(state.try_reserve_batch(&[]).await.unwrap(), []);
}

pub async fn reserve_batch_with_a_negative_amount_takes_nothing(state: &dyn HotState) {
    state.set_capacity("w", &[("cpu", 1000)]).await.unwrap();
    let result = state
        .try_reserve_batch(&[reserve("w", &[("cpu", 100)]), reserve("w", &[("cpu", -1)])])
        .await;
    assert!(matches!(
        result,
        Err(StateError::NegativeAmount { amount: -1, .. })
    ));
    assert_eq!(
        state.get_capacity("w").await.unwrap(),
        Some(vec![("cpu".to_owned(), 1000)])
    );
}

pub async fn concurrent_reserve_batches_never_overcommit(state: &dyn HotState) {
    state
        .set_capacity("w", &[("cpu", 1000), ("mem", 4096)])
        .await
        .unwrap();
    let amounts = [("cpu", 100), ("mem", 1)];
    let batch = [reserve("w", &amounts); 3];
    let attempts = (0..7).map(|_| state.try_reserve_batch(&batch));
    let won = futures::future::join_all(attempts)
        .await
        .into_iter()
        .flat_map(Result::unwrap)
        .filter(Reservation::is_reserved)
        .count();
    assert_eq!(won, 10);
    assert_eq!(
        state.get_capacity("w").await.unwrap(),
        Some(vec![("cpu".to_owned(), 0), ("mem".to_owned(), 4086)])
    );
}

pub async fn get_many_reads_each_key_in_order(state: &dyn HotState) {
    state.set_with_ttl("a", b"1", LONG_TTL).await.unwrap();
    state.set_with_ttl("b", b"2", SHORT_TTL).await.unwrap();
    state.set_with_ttl("c", b"3", LONG_TTL).await.unwrap();
    sleep(PAST_SHORT_TTL).await;
    let keys = ["c", "b", "missing", "a"].map(str::to_owned);
    assert_eq!(
        state.get_many(&keys).await.unwrap(),
        [Some(b"3".to_vec()), None, None, Some(b"1".to_vec())]
    );
    assert_eq!(
        state.get_many(&[]).await.unwrap(),
        Vec::<Option<Vec<u8>>>::new()
    );
}

pub async fn write_batch_applies_every_write_in_order(state: &dyn HotState) {
    state.set_add("s", "old").await.unwrap();
    let writes = [
        Write::Set {
            key: "k".into(),
            value: b"first".to_vec(),
            ttl: LONG_TTL,
        },
        Write::Set {
            key: "k".into(),
            value: b"second".to_vec(),
            ttl: LONG_TTL,
        },
        Write::Set {
            key: "brief".into(),
            value: b"v".to_vec(),
            ttl: SHORT_TTL,
        },
        Write::SetAdd {
            set: "s".into(),
            member: "new".into(),
        },
        Write::SetRemove {
            set: "s".into(),
            member: "old".into(),
        },
        Write::Push {
            queue: "q".into(),
            value: b"1".to_vec(),
        },
        Write::Push {
            queue: "q".into(),
            value: b"2".to_vec(),
        },
    ];
    state.write_batch(&writes).await.unwrap();
    state.write_batch(&[]).await.unwrap();
    assert_eq!(state.get("k").await.unwrap(), Some(b"second".to_vec()));
    assert_eq!(state.set_members("s").await.unwrap(), ["new"]);
    assert_eq!(state.pop_many("q", 10).await.unwrap(), [b"1", b"2"]);
    sleep(PAST_SHORT_TTL).await;
    assert_eq!(state.get("brief").await.unwrap(), None);
}

pub async fn pop_many_takes_up_to_max_oldest_first(state: &dyn HotState) {
    assert_eq!(state.pop_many("q", 5).await.unwrap(), Vec::<Vec<u8>>::new());
    for i in 0..5u8 {
        state.push("q", &[i]).await.unwrap();
    }
    assert_eq!(state.pop_many("q", 0).await.unwrap(), Vec::<Vec<u8>>::new());
    assert_eq!(state.pop_many("q", 3).await.unwrap(), [[0], [1], [2]]);
    assert_eq!(state.queue_len("q").await.unwrap(), 2);
    // What is left is still handed to a waiting pop.
    assert_eq!(state.pop("q", LONG_TTL).await.unwrap(), Some(vec![3]));
    assert_eq!(state.pop_many("q", 3).await.unwrap(), [[4]]);
    assert_eq!(state.queue_len("q").await.unwrap(), 0);
}
