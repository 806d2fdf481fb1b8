use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::*;
use crate::ProvidedWorker;

/// A provider over a list in memory, recording what it is asked.
#[derive(Default)]
struct Fake {
    workers: Mutex<Vec<ProvidedWorker>>,
    asked: Mutex<Vec<String>>,
    refuse_add: bool,
}

#[derive(Debug)]
struct Refused;

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("refused")
    }
}

impl std::error::Error for Refused {}

#[async_trait::async_trait]
impl WorkerProvider for Fake {
    type Error = Refused;

    fn pool(&self) -> &str {
        "fake"
    }

    async fn list(&self) -> Result<Vec<ProvidedWorker>, Refused> {
        Ok(self.workers.lock().unwrap().clone())
    }

    async fn add_worker(&self) -> Result<(), Refused> {
        if self.refuse_add {
            return Err(Refused);
        }
        self.asked.lock().unwrap().push("add".into());
        Ok(())
    }

    async fn remove_worker(&self, name: &str) -> Result<(), Refused> {
        self.asked.lock().unwrap().push(format!("remove {name}"));
        Ok(())
    }
}

fn worker(name: &str, phase: Phase, minute: u64) -> ProvidedWorker {
    ProvidedWorker {
        name: name.into(),
        phase,
        started: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(60 * minute)),
    }
}

fn fake(workers: Vec<ProvidedWorker>) -> Fake {
    Fake {
        workers: Mutex::new(workers),
        ..Fake::default()
    }
}

fn asked(fake: &Fake) -> Vec<String> {
    fake.asked.lock().unwrap().clone()
}

#[tokio::test]
async fn an_empty_pool_gets_the_workers_wanted() {
    let fake = fake(vec![]);
    let round = reconcile(&fake, 2).await.expect("reconciled");
    assert_eq!(round.created, 2);
    assert_eq!(asked(&fake), ["add", "add"]);
}

#[tokio::test]
async fn finished_workers_are_removed_and_replaced() {
    let fake = fake(vec![
        worker("up", Phase::Running, 0),
        worker("exited", Phase::Finished, 1),
    ]);
    let round = reconcile(&fake, 2).await.expect("reconciled");
    assert_eq!(
        (round.running, round.deleted_finished, round.created),
        (1, 1, 1)
    );
    assert_eq!(asked(&fake), ["remove exited", "add"]);
}

#[tokio::test]
async fn extra_workers_go_pending_first_then_the_newest() {
    let fake = fake(vec![
        worker("old", Phase::Running, 0),
        worker("new", Phase::Running, 5),
        worker("starting", Phase::Pending, 1),
    ]);
    let round = reconcile(&fake, 1).await.expect("reconciled");
    assert_eq!(round.deleted_extra, 2);
    assert_eq!(asked(&fake), ["remove starting", "remove new"]);
}

#[tokio::test]
async fn terminating_workers_count_for_nothing() {
    let fake = fake(vec![worker("leaving", Phase::Terminating, 0)]);
    let round = reconcile(&fake, 1).await.expect("reconciled");
    assert_eq!((round.running, round.created), (0, 1));
    assert_eq!(asked(&fake), ["add"]);
}

#[tokio::test]
async fn a_refused_add_stops_the_round() {
    let fake = Fake {
        refuse_add: true,
        ..fake(vec![])
    };
    reconcile(&fake, 3).await.expect_err("refused");
    assert!(asked(&fake).is_empty());
}
