//! The first scheduler: container requests wait in a backlog; each is placed
//! on a live worker of its pool by best fit, with the capacity reserved
//! atomically in the hot state, then handed to the worker's inbox.
//!
//! Every replica runs this loop. Popping the backlog is atomic, so a request
//! is placed by one replica; reserving is atomic, so two replicas placing on
//! one worker never overcommit it.

use std::time::Duration;

use chrono::Utc;
use levers9_api::v1::{controlplane_message, ControlplaneMessage, RunContainer};
use prost::Message;
use tokio::sync::watch;

use super::records::{state, ContainerRecord};
use super::Fleet;
use crate::error::ApiError;

/// The backlog queue.
pub const BACKLOG: &str = "backlog";
/// How long a request may wait for room before it fails.
const PLACEMENT_DEADLINE: Duration = Duration::from_secs(300);
/// How long a request that found no room waits before it is tried again.
const RETRY_DELAY: Duration = Duration::from_millis(200);
/// How long one pop of the backlog waits.
const POP_WAIT: Duration = Duration::from_secs(1);

/// A worker that could take a request: id, free CPU, free memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The worker.
    pub worker_id: String,
    /// Free CPU millicores.
    pub free_cpu: i64,
    /// Free memory MiB.
    pub free_memory: i64,
}

/// The candidates that fit `cpu` and `memory`, best first: best fit leaves
/// the least CPU (then memory) free, so large holes stay open for large
/// requests. Ties go by worker id, so replicas agree.
pub fn best_fit(candidates: &[Candidate], cpu: i64, memory: i64) -> Vec<&Candidate> {
    let mut fitting: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| c.free_cpu >= cpu && c.free_memory >= memory)
        .collect();
    fitting.sort_by(|a, b| {
        (a.free_cpu - cpu, a.free_memory - memory, &a.worker_id).cmp(&(
            b.free_cpu - cpu,
            b.free_memory - memory,
            &b.worker_id,
        ))
    });
    fitting
}

/// What became of one placement attempt.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Handed to a worker.
    Placed,
    /// No live worker has room now; try again later.
    NoRoom,
    /// Nothing to do: the request is gone, no longer pending, or failed.
    Done,
}

/// Places backlog requests until `stopped` turns true.
pub async fn run(fleet: Fleet, stopped: watch::Receiver<bool>) {
    loop {
        if *stopped.borrow() {
            return;
        }
        // Not raced against the stop signal: a pop cancelled half-way could
        // lose the request it took. The stop is seen within POP_WAIT.
        let popped = fleet.state().pop(BACKLOG, POP_WAIT).await;
        let id = match popped {
            Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            Ok(None) => continue,
            Err(error) => {
                tracing::warn!(%error, "cannot read the backlog");
                tokio::time::sleep(RETRY_DELAY).await;
                continue;
            }
        };
        match place(&fleet, &id).await {
            Ok(Outcome::Placed | Outcome::Done) => {}
            Ok(Outcome::NoRoom) => requeue_later(fleet.clone(), id),
            Err(error) => {
                tracing::warn!(%error, container_id = %id, "placement failed; retrying");
                requeue_later(fleet.clone(), id);
            }
        }
    }
}

fn requeue_later(fleet: Fleet, id: String) {
    tokio::spawn(async move {
        tokio::time::sleep(RETRY_DELAY).await;
        if let Err(error) = fleet.state().push(BACKLOG, id.as_bytes()).await {
            tracing::error!(%error, container_id = %id, "cannot put a request back in the backlog");
        }
    });
}

async fn place(fleet: &Fleet, id: &str) -> Result<Outcome, ApiError> {
    let Some(mut container) = fleet.container(id).await? else {
        return Ok(Outcome::Done);
    };
    if container.state != state::PENDING {
        return Ok(Outcome::Done);
    }
    let mut candidates = Vec::new();
    let mut largest = (0u64, 0u64);
    for worker_id in fleet.pool_members(&container.pool).await? {
        if !fleet.is_alive(&worker_id).await? {
            continue;
        }
        if let Some(worker) = fleet.worker(&worker_id).await? {
            largest = (
                largest.0.max(worker.cpu_millicores),
                largest.1.max(worker.memory_mib),
            );
        }
        if let Some((free_cpu, free_memory)) = fleet.free_capacity(&worker_id).await? {
            candidates.push(Candidate {
                worker_id,
                free_cpu,
                free_memory,
            });
        }
    }
    if !candidates.is_empty()
        && (container.cpu_millicores > largest.0 || container.memory_mib > largest.1)
    {
        let reason = format!(
            "no worker of pool {} is big enough: it asks for {} millicores and {} MiB, the \
             largest worker has {} and {}",
            container.pool, container.cpu_millicores, container.memory_mib, largest.0, largest.1
        );
        fail(fleet, &mut container, reason).await?;
        return Ok(Outcome::Done);
    }
    let (cpu, memory) = (
        i64::try_from(container.cpu_millicores).unwrap_or(i64::MAX),
        i64::try_from(container.memory_mib).unwrap_or(i64::MAX),
    );
    for candidate in best_fit(&candidates, cpu, memory) {
        if fleet.try_reserve(&candidate.worker_id, &container).await? {
            container.state = state::SCHEDULED.to_owned();
            container.worker_id = candidate.worker_id.clone();
            fleet.put_container(&container).await?;
            send_run(fleet, &container).await?;
            tracing::info!(container_id = %container.id, worker_id = %container.worker_id, "container placed");
            return Ok(Outcome::Placed);
        }
    }
    let waited = Utc::now() - container.created_at;
    if waited.to_std().unwrap_or_default() > PLACEMENT_DEADLINE {
        let reason = format!(
            "no worker of pool {} had room for {} millicores and {} MiB within {} s",
            container.pool,
            container.cpu_millicores,
            container.memory_mib,
            PLACEMENT_DEADLINE.as_secs()
        );
        fail(fleet, &mut container, reason).await?;
        return Ok(Outcome::Done);
    }
    Ok(Outcome::NoRoom)
}

/// Marks a container failed for `reason` and tells followers.
pub async fn fail(
    fleet: &Fleet,
    container: &mut ContainerRecord,
    reason: String,
) -> Result<(), ApiError> {
    tracing::info!(container_id = %container.id, %reason, "container cannot be placed");
    container.state = state::FAILED.to_owned();
    container.message = reason;
    fleet.put_container(container).await?;
    fleet.publish_end(&container.id).await
}

/// Puts a run request in the inbox of the container's worker.
pub async fn send_run(fleet: &Fleet, c: &ContainerRecord) -> Result<(), ApiError> {
    let message = ControlplaneMessage {
        kind: Some(controlplane_message::Kind::Run(RunContainer {
            request_id: uuid::Uuid::now_v7().to_string(),
            container_id: c.id.clone(),
            image: c.image.clone(),
            args: c.args.clone(),
            env: c.env.clone().into_iter().collect(),
            cpu_millicores: c.cpu_millicores,
            memory_mib: c.memory_mib,
            secret_names: c.secrets.clone(),
            workspace_id: c.workspace_id.clone(),
        })),
    };
    fleet
        .state()
        .push(
            &super::attach::inbox(&c.worker_id),
            &message.encode_to_vec(),
        )
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(id: &str, cpu: i64, memory: i64) -> Candidate {
        Candidate {
            worker_id: id.into(),
            free_cpu: cpu,
            free_memory: memory,
        }
    }

    #[test]
    fn best_fit_prefers_the_tightest_worker_that_fits() {
        let workers = [
            worker("big", 8000, 32_000),
            worker("small", 1000, 2048),
            worker("medium", 2000, 4096),
        ];
        let order: Vec<&str> = best_fit(&workers, 1500, 1024)
            .iter()
            .map(|c| c.worker_id.as_str())
            .collect();
        assert_eq!(order, ["medium", "big"]);
        assert!(best_fit(&workers, 9000, 1).is_empty());
        assert!(best_fit(&workers, 100, 64_000).is_empty());
    }

    #[test]
    fn ties_are_broken_by_worker_id() {
        let workers = [worker("b", 1000, 1000), worker("a", 1000, 1000)];
        assert_eq!(best_fit(&workers, 500, 500)[0].worker_id, "a");
    }
}
