//! The provider of `provider: kubernetes` pools: the pool's worker Jobs
//! (levers9-kube's reconciler), with the worker token Secret those Jobs
//! read kept live before each Job is made ([`worker_token`]).

use std::sync::Arc;

use levers9_config::PoolConfig;
use levers9_kube::{KubeError, Reconciler, WorkerTokenSecret, WorkerWide};
use levers9_provider::{ProvidedWorker, WorkerProvider};
use levers9_store::RecordStore;
use levers9_sync::Lock;

use super::worker_token::{self, Kept};

/// One `provider: kubernetes` pool.
pub struct KubernetesPool {
    jobs: Reconciler,
    token: WorkerTokenSecret,
    store: Arc<dyn RecordStore>,
    /// What keeping the token last came to, so a lasting failure is logged
    /// once, not every round.
    last_kept: Lock<Option<Result<Kept, String>>>,
}

impl KubernetesPool {
    /// Pool `name` on the cluster its `kubernetes` keys name, its Jobs
    /// carrying the worker-wide keys `wide`.
    pub fn connect(
        name: &str,
        pool: &PoolConfig,
        job_resources_enforced: bool,
        wide: &WorkerWide,
        store: Arc<dyn RecordStore>,
    ) -> Result<Self, KubeError> {
        let keys = &pool.kubernetes;
        let client = levers9_kube::remote::client(name, keys)?;
        Ok(Self {
            token: WorkerTokenSecret::new(
                client.clone(),
                &keys.namespace,
                &keys.worker_token_secret,
            ),
            jobs: levers9_kube::remote::provider_reconciler(
                client,
                name,
                pool,
                job_resources_enforced,
                wide,
            ),
            store,
            last_kept: Lock::new(None),
        })
    }

    /// Makes the Secret hold a live worker token. A failure is only logged:
    /// a Secret made by hand serves even where the controlplane may not
    /// read it.
    async fn keep_token(&self) {
        let kept = worker_token::keep(self.store.as_ref(), &self.token, self.jobs.pool())
            .await
            .map_err(|error| error.to_string());
        let mut last = self.last_kept.lock();
        if last.as_ref() == Some(&kept) {
            return;
        }
        let pool = self.jobs.pool();
        match &kept {
            Ok(Kept::NoWorkspace) => tracing::info!(
                pool,
                "no workspace yet: the worker token Secret is written after bootstrap"
            ),
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, pool, "cannot keep the pool's worker token Secret")
            }
        }
        *last = Some(kept);
    }
}

#[async_trait::async_trait]
impl WorkerProvider for KubernetesPool {
    type Error = KubeError;

    fn pool(&self) -> &str {
        self.jobs.pool()
    }

    async fn list(&self) -> Result<Vec<ProvidedWorker>, KubeError> {
        self.jobs.list().await
    }

    async fn add_worker(&self) -> Result<(), KubeError> {
        self.keep_token().await;
        self.jobs.add_worker().await
    }

    async fn remove_worker(&self, name: &str) -> Result<(), KubeError> {
        self.jobs.remove_worker(name).await
    }
}
