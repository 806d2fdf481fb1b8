//! `levers9 worker cordon | uncordon | drain`.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use levers9_api::v1::{
    CordonWorkerRequest, DrainWorkerRequest, ListWorkersRequest, UncordonWorkerRequest,
};

const POLL: Duration = Duration::from_millis(500);

/// Places nothing new on the worker.
pub async fn cordon(context: Option<&str>, worker_id: String) -> Result<()> {
    let client = super::super::connect(context).await?;
    client
        .workers()
        .cordon_worker(CordonWorkerRequest {
            worker_id: worker_id.clone(),
        })
        .await?;
    println!("worker {worker_id} cordoned");
    Ok(())
}

/// Lifts a cordon or a drain.
pub async fn uncordon(context: Option<&str>, worker_id: String) -> Result<()> {
    let client = super::super::connect(context).await?;
    client
        .workers()
        .uncordon_worker(UncordonWorkerRequest {
            worker_id: worker_id.clone(),
        })
        .await?;
    println!("worker {worker_id} uncordoned");
    Ok(())
}

/// Drains the worker and waits until none of its containers runs.
pub async fn drain(context: Option<&str>, worker_id: String, timeout: Duration) -> Result<()> {
    let client = super::super::connect(context).await?;
    let mut left = client
        .workers()
        .drain_worker(DrainWorkerRequest {
            worker_id: worker_id.clone(),
        })
        .await?
        .into_inner()
        .containers;
    let deadline = Instant::now() + timeout;
    while left > 0 {
        if Instant::now() >= deadline {
            bail!(
                "worker {worker_id} still runs {left} containers after {} s; it stays cordoned \
                 and drains on (levers9 worker list shows it; stop those containers with \
                 levers9 container stop)",
                timeout.as_secs()
            );
        }
        eprintln!("waiting for {left} containers on {worker_id}");
        tokio::time::sleep(POLL).await;
        left = client
            .workers()
            .list_workers(ListWorkersRequest {})
            .await?
            .into_inner()
            .workers
            .into_iter()
            .find(|w| w.worker_id == worker_id)
            .map_or(0, |w| w.containers);
    }
    println!("worker {worker_id} drained");
    Ok(())
}
