//! The providers of the pools the controlplane scales itself: worker Jobs
//! of `provider: kubernetes` pools (on the cluster their
//! `worker.pools.<name>.kubernetes` keys name) and worker processes of
//! `provider: process` pools (on this machine, [`process`]). Each such
//! pool is kept at the workers wanted (`scheduler::demand`) by one loop,
//! written once over [`WorkerProvider`], run by one replica at a time under
//! a lease. An attached cluster does the same from inside the cluster, with
//! no key on the controlplane (`levers9 cluster agent`).

pub mod kubernetes;
pub mod process;
pub mod worker_token;

use std::collections::BTreeMap;
use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

use levers9_config::{PoolConfig, PoolProvider};
use levers9_provider::WorkerProvider;
use levers9_state::keys;
use levers9_store::RecordStore;
use tokio::sync::watch;

use crate::scheduler::{demand, Scheduling};

/// How often each pool is reconciled.
pub const PERIOD: Duration = Duration::from_secs(10);

/// What the providers need of the running controlplane.
pub struct Providers {
    /// The fleet and its scheduling, for the demand.
    pub scheduling: Scheduling,
    /// `worker.pools`.
    pub pools: BTreeMap<String, PoolConfig>,
    /// `worker.jobResourcesEnforced`.
    pub job_resources_enforced: bool,
    /// What every worker Job carries besides its pool's keys
    /// (`worker.insecureRegistries`, `storage.juicefs`).
    pub worker_wide: levers9_kube::WorkerWide,
    /// The record store, for the workers' tokens.
    pub store: Arc<dyn RecordStore>,
    /// What `provider: process` pools start their workers with.
    pub processes: Arc<process::Launch>,
    /// This replica, as lease holder.
    pub holder: String,
}

/// Reconciles every pool with a provider of `providers.pools` each
/// [`PERIOD`] until `stopped`.
pub async fn run(providers: Providers, stopped: watch::Receiver<bool>) {
    let mut loops = Vec::new();
    for (name, pool) in providers.pools {
        let scheduling = providers.scheduling.clone();
        let holder = providers.holder.clone();
        let stopped = stopped.clone();
        match pool.provider {
            PoolProvider::Local => continue,
            PoolProvider::Kubernetes => {
                tracing::info!(pool = %name, api_server = %pool.kubernetes.api_server, namespace = %pool.kubernetes.namespace, "managing the pool's worker Jobs");
                let enforced = providers.job_resources_enforced;
                let pool_name = name.clone();
                // Made in the loop: the token file may be mounted after the start.
                let store = providers.store.clone();
                let wide = providers.worker_wide.clone();
                let make = move || {
                    kubernetes::KubernetesPool::connect(
                        &pool_name,
                        &pool,
                        enforced,
                        &wide,
                        store.clone(),
                    )
                };
                loops.push(tokio::spawn(reconcile_pool(
                    scheduling, name, holder, stopped, make,
                )));
            }
            PoolProvider::Process => {
                tracing::info!(pool = %name, "managing the pool's worker processes");
                let provider = process::ProcessProvider::new(
                    &name,
                    pool,
                    providers.processes.clone(),
                    scheduling.fleet().clone(),
                );
                let make = move || Ok::<_, std::convert::Infallible>(provider.clone());
                loops.push(tokio::spawn(reconcile_pool(
                    scheduling, name, holder, stopped, make,
                )));
            }
        }
    }
    for pool_loop in loops {
        let _ = pool_loop.await;
    }
}

/// Brings one pool to its workers wanted each [`PERIOD`] while this replica
/// holds the pool's lease; when another replica holds it, or on stop, lets
/// the provider stop what it must ([`WorkerProvider::stop`]).
async fn reconcile_pool<P, E, F>(
    scheduling: Scheduling,
    name: String,
    holder: String,
    mut stopped: watch::Receiver<bool>,
    mut make: F,
) where
    P: WorkerProvider,
    E: Display,
    F: FnMut() -> Result<P, E>,
{
    let fleet = scheduling.fleet();
    let mut provider: Option<P> = None;
    let lease = keys::pool_provider(&name);
    // The first round at once: a pool's minimum is up without a wait.
    let mut rounds = tokio::time::interval(PERIOD);
    rounds.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let stop = tokio::select! {
            _ = stopped.wait_for(|s| *s) => true,
            _ = rounds.tick() => false,
        };
        if stop {
            if let Some(provider) = &provider {
                provider.stop().await;
            }
            let _ = fleet.state.release_lease(&lease, &holder).await;
            return;
        }
        match fleet.state.acquire_lease(&lease, &holder, PERIOD * 3).await {
            Ok(true) => {}
            Ok(false) => {
                // Another replica runs the pool: what only this one can
                // reach (its worker processes) stops.
                if let Some(provider) = &provider {
                    provider.stop().await;
                }
                continue;
            }
            Err(error) => {
                tracing::warn!(%error, pool = %name, "cannot take the pool provider lease");
                continue;
            }
        }
        if provider.is_none() {
            match make() {
                Ok(made) => provider = Some(made),
                Err(error) => {
                    tracing::warn!(%error, pool = %name, "cannot reach the pool's provider");
                    continue;
                }
            }
        }
        let Some(provider) = &provider else {
            continue;
        };
        let wanted = match demand::read(&scheduling, &name, None).await {
            Ok(demand) => demand.wanted,
            Err(error) => {
                tracing::warn!(%error, pool = %name, "cannot read the pool's demand");
                continue;
            }
        };
        if let Err(error) = levers9_provider::reconcile(provider, wanted as usize).await {
            tracing::warn!(%error, pool = %name, "cannot reconcile the pool's workers");
        }
    }
}
