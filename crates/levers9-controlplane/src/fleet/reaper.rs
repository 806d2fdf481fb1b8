//! Declares workers lost when they stop heartbeating, and the containers
//! they held lost with them; puts back in the backlog the requests of
//! scheduler replicas that stopped ([`claims::recover`]). One replica at a
//! time does it, under a lease.

use tokio::sync::watch;

use super::records::ContainerState;
use super::{Fleet, FleetError};
use crate::scheduler::{claims, Scheduling};

const LEASE: &str = "worker-reaper";

/// Checks every worker each half heartbeat TTL until `stopped`.
pub async fn run(scheduling: Scheduling, holder: String, mut stopped: watch::Receiver<bool>) {
    let fleet = scheduling.fleet();
    let period = fleet.heartbeat_ttl() / 2;
    loop {
        let stop = tokio::select! {
            _ = stopped.wait_for(|s| *s) => true,
            _ = tokio::time::sleep(period) => false,
        };
        if stop {
            let _ = fleet.state.release_lease(LEASE, &holder).await;
            return;
        }
        match fleet
            .state
            .acquire_lease(LEASE, &holder, fleet.heartbeat_ttl())
            .await
        {
            Ok(true) => {
                if let Err(error) = sweep(fleet).await {
                    tracing::warn!(%error, "cannot check workers for heartbeats");
                }
                if let Err(error) = claims::recover(&scheduling).await {
                    tracing::warn!(%error, "cannot check stopped replicas for requests they held");
                }
            }
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, "cannot take the worker reaper lease"),
        }
    }
}

async fn sweep(fleet: &Fleet) -> Result<(), FleetError> {
    for worker_id in fleet.worker_ids().await? {
        if fleet.is_alive(&worker_id).await? {
            continue;
        }
        let Some(worker) = fleet.worker(&worker_id).await? else {
            fleet.state.set_remove("workers", &worker_id).await?;
            continue;
        };
        let reason = format!(
            "worker {} ({}) stopped sending heartbeats for {} s and was declared lost",
            worker.id,
            worker.hostname,
            fleet.heartbeat_ttl().as_secs()
        );
        for container_id in fleet.worker_containers(&worker.id).await? {
            let Some(mut container) = fleet.container(&container_id).await? else {
                continue;
            };
            if container.state.is_final() {
                continue;
            }
            container.state = ContainerState::Lost;
            container.message = reason.clone();
            fleet.put_container(&container).await?;
            fleet.publish_end(&container.id).await?;
        }
        fleet.remove_worker(&worker).await?;
        tracing::warn!(worker_id = %worker.id, pool = %worker.pool, hostname = %worker.hostname, "worker lost: no heartbeat within the TTL");
    }
    Ok(())
}
