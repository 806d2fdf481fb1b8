//! The provider of `provider: kubernetes` pools: the controlplane keeps
//! each such pool's worker Jobs, on the cluster its
//! `worker.pools.<name>.kubernetes` keys name, at the workers wanted
//! ([`super::demand`]). One replica at a time does it for a pool, under a
//! lease. An attached cluster does the same from inside the cluster, with
//! no key on the controlplane (`levers9 cluster agent`). Each round also
//! keeps the pool's worker token Secret ([`worker_token`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use levers9_config::{PoolConfig, PoolProvider};
use levers9_store::RecordStore;
use tokio::sync::watch;

use super::{demand, worker_token, Fleet};

/// How often each pool is reconciled.
pub const PERIOD: Duration = Duration::from_secs(10);

/// Reconciles every `provider: kubernetes` pool of `pools` each
/// [`PERIOD`] until `stopped`.
pub async fn run(
    fleet: Fleet,
    store: Arc<dyn RecordStore>,
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
            store.clone(),
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
    store: Arc<dyn RecordStore>,
    name: String,
    pool: PoolConfig,
    job_resources_enforced: bool,
    holder: String,
    mut stopped: watch::Receiver<bool>,
) {
    // Made in the loop: the token file may be mounted after the start.
    let mut reconciler = None;
    let mut token_secret = None;
    let mut token_seen = None;
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
                    token_secret = Some(levers9_kube::WorkerTokenSecret::new(
                        client.clone(),
                        &pool.kubernetes.namespace,
                        &pool.kubernetes.worker_token_secret,
                    ));
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
        let (Some(reconciler), Some(token_secret)) = (&reconciler, &token_secret) else {
            continue;
        };
        // Jobs are reconciled whatever this says: a Secret made by hand
        // serves even where the controlplane may not read it.
        let kept = worker_token::keep(store.as_ref(), token_secret, &name)
            .await
            .map_err(|error| error.to_string());
        if token_seen.as_ref() != Some(&kept) {
            match &kept {
                Ok(worker_token::Kept::NoWorkspace) => {
                    tracing::info!(pool = %name, "no workspace yet: the worker token Secret is written after bootstrap")
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, pool = %name, "cannot keep the pool's worker token Secret")
                }
            }
            token_seen = Some(kept);
        }
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
