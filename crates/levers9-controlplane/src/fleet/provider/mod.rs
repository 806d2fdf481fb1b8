//! The provider of `provider: kubernetes` pools: the controlplane keeps
//! each such pool's worker Jobs, on the cluster its
//! `worker.pools.<name>.kubernetes` keys name, at the workers wanted
//! ([`super::demand`]). One replica at a time does it for a pool, under a
//! lease. An attached cluster does the same from inside the cluster, with
//! no key on the controlplane (`levers9 cluster agent`).

use std::collections::BTreeMap;
use std::time::Duration;

use levers9_config::{PoolConfig, PoolProvider};
use tokio::sync::watch;

use super::{demand, Fleet};

/// How often each pool is reconciled.
pub const PERIOD: Duration = Duration::from_secs(10);

/// Reconciles every `provider: kubernetes` pool of `pools` each
/// [`PERIOD`] until `stopped`.
pub async fn run(
    fleet: Fleet,
    pools: BTreeMap<String, PoolConfig>,
    job_resources_enforced: bool,
    holder: String,
    stopped: watch::Receiver<bool>,
) {
    let mut loops = Vec::new();
    for (name, pool) in pools {
        if pool.provider != PoolProvider::Kubernetes {
            continue;
        }
        tracing::info!(pool = %name, api_server = %pool.kubernetes.api_server, namespace = %pool.kubernetes.namespace, "managing the pool's worker Jobs");
        loops.push(tokio::spawn(reconcile_pool(
            fleet.clone(),
            name,
            pool,
            job_resources_enforced,
            holder.clone(),
            stopped.clone(),
        )));
    }
    for pool_loop in loops {
        let _ = pool_loop.await;
    }
}

async fn reconcile_pool(
    fleet: Fleet,
    name: String,
    pool: PoolConfig,
    job_resources_enforced: bool,
    holder: String,
    mut stopped: watch::Receiver<bool>,
) {
    // Made in the loop: the token file may be mounted after the start.
    let mut reconciler = None;
    let lease = format!("pool-provider:{name}");
    loop {
        let stop = tokio::select! {
            _ = stopped.wait_for(|s| *s) => true,
            _ = tokio::time::sleep(PERIOD) => false,
        };
        if stop {
            let _ = fleet.state().release_lease(&lease, &holder).await;
            return;
        }
        match fleet
            .state()
            .acquire_lease(&lease, &holder, PERIOD * 3)
            .await
        {
            Ok(true) => {}
            Ok(false) => continue,
            Err(error) => {
                tracing::warn!(%error, pool = %name, "cannot take the pool provider lease");
                continue;
            }
        }
        if reconciler.is_none() {
            match levers9_kube::remote::client(&name, &pool.kubernetes) {
                Ok(client) => {
                    reconciler = Some(levers9_kube::remote::provider_reconciler(
                        client,
                        &name,
                        &pool,
                        job_resources_enforced,
                    ));
                }
                Err(error) => {
                    tracing::warn!(%error, pool = %name, "cannot reach the pool's cluster");
                    continue;
                }
            }
        }
        let Some(reconciler) = &reconciler else {
            continue;
        };
        let wanted = match demand::read(&fleet, &name, None).await {
            Ok(demand) => demand.wanted,
            Err(error) => {
                tracing::warn!(%error, pool = %name, "cannot read the pool's demand");
                continue;
            }
        };
        if let Err(error) = reconciler.reconcile(wanted as usize).await {
            tracing::warn!(%error, pool = %name, "cannot reconcile the pool's worker Jobs");
        }
    }
}
