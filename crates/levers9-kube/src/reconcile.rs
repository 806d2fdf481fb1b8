//! A pool's worker Jobs in one namespace, as a [`WorkerProvider`]: the
//! reconcile round itself is [`levers9_provider::reconcile`].

use std::time::SystemTime;

use k8s_openapi::api::batch::v1::Job;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};
use levers9_provider::{Phase, ProvidedWorker, Round, WorkerProvider};

use crate::job::{pool_selector, WorkerJob};
use crate::worker_wide::WorkerWide;
use crate::KubeError;

fn phase(job: &Job) -> Phase {
    if job.metadata.deletion_timestamp.is_some() {
        return Phase::Terminating;
    }
    let Some(status) = &job.status else {
        return Phase::Pending;
    };
    let finished_condition = status
        .conditions
        .iter()
        .flatten()
        .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True");
    if finished_condition || status.succeeded.unwrap_or(0) > 0 || status.failed.unwrap_or(0) > 0 {
        Phase::Finished
    } else if status.ready.unwrap_or(0) > 0 {
        Phase::Running
    } else {
        Phase::Pending
    }
}

/// Creates, lists and deletes one pool's worker Jobs in one namespace.
pub struct Reconciler {
    jobs: Api<Job>,
    namespace: String,
    pool: String,
    template: Job,
}

impl Reconciler {
    /// A reconciler for the Jobs `worker` describes, in `namespace`.
    pub fn new(client: Client, namespace: &str, worker: &WorkerJob<'_>) -> Self {
        Self::with_worker_wide(client, namespace, worker, &WorkerWide::default())
    }

    /// A reconciler for the Jobs `worker` describes with the worker-wide
    /// keys `wide` ([`WorkerJob::job_with`]), in `namespace`.
    pub fn with_worker_wide(
        client: Client,
        namespace: &str,
        worker: &WorkerJob<'_>,
        wide: &WorkerWide,
    ) -> Self {
        Self {
            jobs: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            pool: worker.pool.to_owned(),
            template: worker.job_with(wide),
        }
    }

    /// One round of [`levers9_provider::reconcile`] over the Jobs.
    ///
    /// # Guarantees
    /// - Only Jobs labelled as this pool's workers are touched.
    /// - Deletes propagate in the background, so a Job's pod goes with it
    ///   (a running worker gets SIGTERM and drains).
    ///
    /// # Errors
    /// The first request the API server refuses, naming the pool and the
    /// namespace.
    pub async fn reconcile(&self, wanted: usize) -> Result<Round, KubeError> {
        levers9_provider::reconcile(self, wanted).await
    }

    fn error(&self, verb: &'static str, source: kube::Error) -> KubeError {
        KubeError::Jobs {
            verb,
            pool: self.pool.clone(),
            namespace: self.namespace.clone(),
            source: Box::new(source),
        }
    }
}

#[async_trait::async_trait]
impl WorkerProvider for Reconciler {
    type Error = KubeError;

    fn pool(&self) -> &str {
        &self.pool
    }

    async fn list(&self) -> Result<Vec<ProvidedWorker>, KubeError> {
        let listed = self
            .jobs
            .list(&ListParams::default().labels(&pool_selector(&self.pool)))
            .await
            .map_err(|source| self.error("list", source))?;
        Ok(listed
            .items
            .into_iter()
            .map(|job| ProvidedWorker {
                phase: phase(&job),
                started: job
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map(|t| SystemTime::from(t.0)),
                name: job.metadata.name.unwrap_or_default(),
            })
            .collect())
    }

    async fn add_worker(&self) -> Result<(), KubeError> {
        self.jobs
            .create(&PostParams::default(), &self.template)
            .await
            .map_err(|source| self.error("create", source))?;
        Ok(())
    }

    async fn remove_worker(&self, name: &str) -> Result<(), KubeError> {
        match self.jobs.delete(name, &DeleteParams::background()).await {
            Ok(_) => Ok(()),
            // Already gone: what we wanted.
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(source) => Err(self.error("delete", source)),
        }
    }
}
