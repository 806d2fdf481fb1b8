//! The scheduler's batches on the in-process hot state: fairness when room
//! is short, two replicas deciding on stale pictures of the same workers,
//! a request that can never run, and one its owner withdrew. (The Redis script behind the batch
//! reservation has its own two-replica test in levers9-state; the whole
//! system on Redis is tested end to end in levers9-cli's `scheduling`.)

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use levers9_api::v1::{controlplane_message, ControlplaneMessage};
use levers9_controlplane::fleet::records::{ContainerRecord, ContainerState, WorkerRecord};
use levers9_controlplane::fleet::{inbox, Fleet, CPU, MEMORY};
use levers9_controlplane::functions::TaskState;
use levers9_controlplane::scheduler::claims;
use levers9_controlplane::scheduler::placement::Offer;
use levers9_controlplane::scheduler::view;
use levers9_controlplane::scheduler::{Outcome, Scheduler, Scheduling, BACKLOG};
use levers9_state::{keys, HotState, MemoryState};
use prost::Message;
use tokio::sync::watch;

struct Rig {
    fleet: Fleet,
    scheduling: Scheduling,
    /// The hot state under both, where the test reads inboxes and claims.
    state: Arc<dyn HotState>,
}

/// A fleet of workers `w1`, `w2`… with `cpus` whole CPUs each.
async fn rig(workers: usize, cpus: u64) -> Rig {
    let state: Arc<dyn HotState> = Arc::new(MemoryState::new());
    let fleet = Fleet::new(
        state.clone(),
        Duration::from_secs(3600),
        BTreeMap::new(),
        Arc::new(TaskState::new(
            state.clone(),
            Duration::from_secs(60),
            "test",
        )),
    );
    for n in 1..=workers {
        let worker = WorkerRecord {
            id: format!("w{n}"),
            pool: "default".into(),
            hostname: "test".into(),
            runtime: "runc".into(),
            cpu_millicores: cpus * 1000,
            memory_mib: 4096,
            gpus: Vec::new(),
            last_heartbeat_at: chrono::Utc::now(),
            token_id: String::new(),
        };
        fleet.put_worker(&worker).await.expect("worker");
        let free = [
            (CPU.to_owned(), worker.cpu_millicores as i64),
            (MEMORY.to_owned(), 4096),
        ];
        fleet
            .set_free_capacity(&worker.id, &free)
            .await
            .expect("capacity");
        fleet.touch_alive(&worker.id).await.expect("alive");
    }
    Rig {
        scheduling: Scheduling::new(fleet.clone(), state.clone()),
        fleet,
        state,
    }
}

impl Rig {
    /// Stores requests of one CPU each, `(id, workspace)`, and returns their ids.
    async fn requests(&self, requests: &[(&str, &str)]) -> Vec<String> {
        let records: Vec<ContainerRecord> = requests
            .iter()
            .map(|&(id, workspace)| ContainerRecord {
                id: id.into(),
                cpu_millicores: 1000,
                memory_mib: 64,
                ..ContainerRecord::pending(workspace, "registry.test/app:1")
            })
            .collect();
        self.fleet.put_containers(&records).await.expect("put");
        records.into_iter().map(|c| c.id).collect()
    }

    /// `n` requests of workspace `ws`, ids `ws0`, `ws1`…
    async fn flood(&self, ws: &str, n: usize) -> Vec<String> {
        let ids: Vec<String> = (0..n).map(|i| format!("{ws}{i}")).collect();
        let requests: Vec<(&str, &str)> = ids.iter().map(|id| (id.as_str(), ws)).collect();
        self.requests(&requests).await
    }

    async fn picture(&self) -> watch::Receiver<Arc<Vec<Offer>>> {
        let offers = view::read(&self.scheduling, &mut HashMap::new())
            .await
            .expect("read the fleet");
        // The sender may go: the scheduler keeps deciding on what it has.
        watch::channel(Arc::new(offers)).1
    }

    async fn record(&self, id: &str) -> ContainerRecord {
        self.fleet
            .container(id)
            .await
            .expect("read")
            .expect("on record")
    }

    async fn free_cpu(&self, worker: &str) -> i64 {
        self.fleet
            .free_capacity(worker)
            .await
            .expect("read")
            .expect("capacity")
            .get(CPU)
    }

    /// The containers whose run requests wait in a worker's inbox.
    async fn sent_to(&self, worker: &str) -> Vec<String> {
        let queued = self
            .state
            .pop_many(&inbox::queue(worker), 100)
            .await
            .expect("inbox");
        queued
            .iter()
            .map(|bytes| {
                match ControlplaneMessage::decode(bytes.as_slice())
                    .expect("a message")
                    .kind
                {
                    Some(controlplane_message::Kind::Run(run)) => run.container_id,
                    other => panic!("not a run request: {other:?}"),
                }
            })
            .collect()
    }
}

#[tokio::test]
async fn short_room_goes_round_robin_by_workspace_and_the_rest_waits() {
    let rig = rig(1, 3).await;
    let ids = rig
        .requests(&[
            ("a0", "a"),
            ("a1", "a"),
            ("a2", "a"),
            ("a3", "a"),
            ("b0", "b"),
        ])
        .await;
    let mut scheduler = Scheduler::new(rig.scheduling.clone(), rig.picture().await, "test");
    let outcome = scheduler.place_batch(ids).await;
    assert_eq!(
        outcome,
        Outcome {
            placed: 3,
            requeued: 2,
            failed: 0
        }
    );
    for id in ["a0", "b0", "a1"] {
        let c = rig.record(id).await;
        assert_eq!(
            (c.state, c.worker_id.as_str()),
            (ContainerState::Scheduled, "w1")
        );
        assert_eq!(c.pool, "default");
    }
    for id in ["a2", "a3"] {
        assert_eq!(rig.record(id).await.state, ContainerState::Pending);
    }
    assert_eq!(rig.sent_to("w1").await, ["a0", "b0", "a1"]);
    assert_eq!(rig.free_cpu("w1").await, 0);
    assert_eq!(
        rig.fleet.worker_containers("w1").await.expect("index"),
        ["a0", "a1", "b0"]
    );
}

#[tokio::test]
async fn a_replica_on_a_stale_picture_loses_the_race_and_places_elsewhere() {
    let rig = rig(3, 2).await;
    let stale = rig.picture().await;
    let mut first = Scheduler::new(rig.scheduling.clone(), rig.picture().await, "test");
    let mut second = Scheduler::new(rig.scheduling.clone(), stale, "test");
    let ids = rig.flood("x", 2).await;
    assert_eq!(first.place_batch(ids).await.placed, 2);
    assert_eq!(rig.sent_to("w1").await, ["x0", "x1"]);
    // The second still sees w1 empty: its first two reservations there are
    // refused, the picture learns w1 is full, and they land on w3.
    let ids = rig.flood("y", 4).await;
    assert_eq!(
        second.place_batch(ids).await,
        Outcome {
            placed: 4,
            requeued: 0,
            failed: 0
        }
    );
    assert_eq!(rig.sent_to("w1").await, Vec::<String>::new());
    assert_eq!(rig.sent_to("w2").await, ["y2", "y3"]);
    assert_eq!(rig.sent_to("w3").await, ["y0", "y1"]);
    for worker in ["w1", "w2", "w3"] {
        assert_eq!(rig.free_cpu(worker).await, 0, "{worker}");
    }
}

#[tokio::test]
async fn two_replicas_racing_for_the_same_workers_never_overcommit() {
    let rig = rig(2, 4).await;
    let mut one = Scheduler::new(rig.scheduling.clone(), rig.picture().await, "test");
    let mut other = Scheduler::new(rig.scheduling.clone(), rig.picture().await, "test");
    let (ids_one, ids_other) = (rig.flood("p", 6).await, rig.flood("q", 6).await);
    let (a, b) = tokio::join!(one.place_batch(ids_one), other.place_batch(ids_other));
    assert_eq!(a.placed + b.placed, 8, "{a:?} {b:?}");
    assert_eq!(a.requeued + b.requeued, 4, "{a:?} {b:?}");
    for worker in ["w1", "w2"] {
        assert_eq!(rig.free_cpu(worker).await, 0, "{worker}");
        assert_eq!(rig.sent_to(worker).await.len(), 4, "{worker}");
    }
}

#[tokio::test]
async fn a_request_no_worker_can_take_fails_with_the_reason() {
    let rig = rig(1, 2).await;
    let big = ContainerRecord {
        id: "big".into(),
        cpu_millicores: 64_000,
        memory_mib: 64,
        ..ContainerRecord::pending("a", "registry.test/app:1")
    };
    rig.fleet.put_container(&big).await.expect("put");
    let mut scheduler = Scheduler::new(rig.scheduling.clone(), rig.picture().await, "test");
    let outcome = scheduler.place_batch(vec!["big".into()]).await;
    assert_eq!(outcome.failed, 1, "{outcome:?}");
    let record = rig.record("big").await;
    assert_eq!(record.state, ContainerState::Failed);
    assert_eq!(
        record.message,
        "no worker is big enough: it asks for 64000 millicores and 64 MiB, the largest worker \
         has 2000 and 4096"
    );
    assert_eq!(rig.free_cpu("w1").await, 2000);
}

#[tokio::test]
async fn a_withdrawn_request_fails_with_its_reason_and_takes_no_room() {
    let rig = rig(1, 2).await;
    let ids = rig.flood("x", 2).await;
    rig.scheduling
        .withdraw(&ids[..1], "not needed any more")
        .await
        .expect("withdraw");
    let mut scheduler = Scheduler::new(rig.scheduling.clone(), rig.picture().await, "test");
    let outcome = scheduler.place_batch(ids).await;
    assert_eq!(
        outcome,
        Outcome {
            placed: 1,
            requeued: 0,
            failed: 1
        }
    );
    let withdrawn = rig.record("x0").await;
    assert_eq!(
        (withdrawn.state, withdrawn.message.as_str()),
        (ContainerState::Failed, "not needed any more")
    );
    assert_eq!(rig.sent_to("w1").await, ["x1"]);
    assert_eq!(rig.free_cpu("w1").await, 1000);
}

#[tokio::test]
async fn a_replica_that_dies_holding_a_batch_loses_none_of_it() {
    let rig = rig(1, 4).await;
    let push = |ids: Vec<String>| {
        let state = rig.state.clone();
        async move {
            for id in ids {
                state.push(BACKLOG, id.as_bytes()).await.expect("push");
            }
        }
    };
    // One replica claims a batch and dies before settling it, having
    // placed one request of it; another is alive and busy with its own.
    claims::refresh(&rig.scheduling, "dead", true)
        .await
        .expect("alive");
    claims::refresh(&rig.scheduling, "busy", true)
        .await
        .expect("alive");
    push(rig.flood("d", 3).await).await;
    let dead = Scheduler::new(rig.scheduling.clone(), rig.picture().await, "dead");
    assert_eq!(dead.pop_batch().await.expect("claim"), ["d0", "d1", "d2"]);
    let mut placed = rig.record("d0").await;
    placed.state = ContainerState::Scheduled;
    rig.fleet.put_container(&placed).await.expect("put");
    push(rig.flood("b", 1).await).await;
    let busy = Scheduler::new(rig.scheduling.clone(), rig.picture().await, "busy");
    assert_eq!(busy.pop_batch().await.expect("claim"), ["b0"]);
    assert_eq!(rig.state.queue_len(BACKLOG).await.expect("len"), 0);

    // While the dead replica still counts as alive, nothing moves.
    assert_eq!(claims::recover(&rig.scheduling).await.expect("recover"), 0);
    claims::forget(&rig.scheduling, "dead").await.expect("gone");
    assert_eq!(claims::recover(&rig.scheduling).await.expect("recover"), 2);
    let held = |replica: &str| {
        let state = rig.state.clone();
        let list = keys::backlog_claims(replica);
        async move { state.claimed(&list).await.expect("claims") }
    };
    assert!(held("dead").await.is_empty());
    assert_eq!(held("busy").await, [b"b0"]);

    // Another replica places what the dead one held, once.
    let mut live = Scheduler::new(rig.scheduling.clone(), rig.picture().await, "live");
    let ids = live.pop_batch().await.expect("claim");
    assert_eq!(ids, ["d1", "d2"]);
    assert_eq!(live.place_batch(ids).await.placed, 2);
    assert!(held("live").await.is_empty());
    assert_eq!(rig.sent_to("w1").await, ["d1", "d2"]);
    assert_eq!(claims::recover(&rig.scheduling).await.expect("recover"), 0);
}
