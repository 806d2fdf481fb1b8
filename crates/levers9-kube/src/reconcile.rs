//! Keeps a pool's worker Jobs at the number wanted, in one namespace.

use k8s_openapi::api::batch::v1::Job;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};

use crate::job::{pool_selector, WorkerJob};
use crate::KubeError;

/// What one reconcile round saw and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round {
    /// Jobs whose worker pod is ready, before the round's changes.
    pub running: usize,
    /// Jobs whose pod is not ready yet (scheduling, pulling, starting).
    pub pending: usize,
    /// Jobs created.
    pub created: usize,
    /// Finished Jobs (their worker exited) deleted.
    pub deleted_finished: usize,
    /// Jobs beyond the number wanted deleted.
    pub deleted_extra: usize,
}

/// Where one worker Job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Being deleted: counts for nothing, needs nothing.
    Terminating,
    /// Its worker exited: delete it, so its pod goes too.
    Finished,
    /// Its pod is ready.
    Running,
    /// Not ready yet.
    Pending,
}

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

/// Creates, counts and deletes one pool's worker Jobs in one namespace.
pub struct Reconciler {
    jobs: Api<Job>,
    namespace: String,
    pool: String,
    template: Job,
}

impl Reconciler {
    /// A reconciler for the Jobs `worker` describes, in `namespace`.
    pub fn new(client: Client, namespace: &str, worker: &WorkerJob<'_>) -> Self {
        Self {
            jobs: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            pool: worker.pool.to_owned(),
            template: worker.job(),
        }
    }

    /// One round: deletes finished Jobs, then creates or deletes Jobs until
    /// `wanted` are running or pending.
    ///
    /// # Guarantees
    /// - Only Jobs labelled as this pool's workers are touched.
    /// - Extra Jobs are deleted pending ones first (they run nothing yet),
    ///   newest first; a running worker gets SIGTERM and drains.
    /// - Deletes propagate in the background, so a Job's pod goes with it.
    ///
    /// # Errors
    /// The first request the API server refuses, naming the pool and the
    /// namespace; the round stops there and the next one starts over from a
    /// fresh list, so nothing is done twice.
    pub async fn reconcile(&self, wanted: usize) -> Result<Round, KubeError> {
        let listed = self
            .jobs
            .list(&ListParams::default().labels(&pool_selector(&self.pool)))
            .await
            .map_err(|source| self.error("list", source))?;
        let mut round = Round::default();
        let mut running = Vec::new();
        let mut pending = Vec::new();
        for job in listed.items {
            let name = job.metadata.name.clone().unwrap_or_default();
            let created = job.metadata.creation_timestamp.clone();
            match phase(&job) {
                Phase::Terminating => {}
                Phase::Finished => {
                    self.delete(&name).await?;
                    round.deleted_finished += 1;
                }
                Phase::Running => running.push((created, name)),
                Phase::Pending => pending.push((created, name)),
            }
        }
        round.running = running.len();
        round.pending = pending.len();
        let active = running.len() + pending.len();
        for _ in active..wanted {
            self.jobs
                .create(&PostParams::default(), &self.template)
                .await
                .map_err(|source| self.error("create", source))?;
            round.created += 1;
        }
        // Oldest first, so popping takes the newest.
        running.sort();
        pending.sort();
        let mut extra = active.saturating_sub(wanted);
        while extra > 0 {
            let Some((_, name)) = pending.pop().or_else(|| running.pop()) else {
                break;
            };
            self.delete(&name).await?;
            round.deleted_extra += 1;
            extra -= 1;
        }
        if round.created + round.deleted_extra + round.deleted_finished > 0 {
            tracing::info!(pool = %self.pool, namespace = %self.namespace, wanted, ?round, "worker Jobs reconciled");
        }
        Ok(round)
    }

    async fn delete(&self, name: &str) -> Result<(), KubeError> {
        match self.jobs.delete(name, &DeleteParams::background()).await {
            Ok(_) => Ok(()),
            // Already gone: what we wanted.
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(source) => Err(self.error("delete", source)),
        }
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
