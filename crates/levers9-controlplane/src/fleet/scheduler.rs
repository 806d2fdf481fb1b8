//! The first scheduler: container requests wait in a backlog; each is placed
//! on a live worker of its pool by best fit, with the capacity reserved
//! atomically in the hot state, then handed to the worker's inbox.
//!
//! Every replica runs this loop. Popping the backlog is atomic, so a request
//! is placed by one replica; reserving is atomic, so two replicas placing on
//! one worker never overcommit it.

use std::time::Duration;

use chrono::Utc;
use levers9_api::v1::{
    controlplane_message, ControlplaneMessage, ObjectMount, RunContainer, StopContainer,
};
use tokio::sync::watch;

use super::records::{state, ContainerRecord, WorkerRecord};
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

/// A worker that could take a request, with what it has free.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The worker.
    pub worker_id: String,
    /// Free CPU millicores.
    pub free_cpu: i64,
    /// Free memory MiB.
    pub free_memory: i64,
    /// Free GPUs of the type being considered (0 when none is asked for).
    pub free_gpus: i64,
}

/// The candidates that fit `gpus`, `cpu` and `memory`, best first: best fit
/// leaves the fewest GPUs, then the least CPU, then memory free, so large
/// holes stay open for large requests (a 4-GPU request still finds a worker
/// with 4 free). Ties go by worker id, so replicas agree.
pub fn best_fit(candidates: &[Candidate], cpu: i64, memory: i64, gpus: i64) -> Vec<&Candidate> {
    let mut fitting: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| c.free_cpu >= cpu && c.free_memory >= memory && c.free_gpus >= gpus)
        .collect();
    fitting.sort_by(|a, b| {
        (
            a.free_gpus - gpus,
            a.free_cpu - cpu,
            a.free_memory - memory,
            &a.worker_id,
        )
            .cmp(&(
                b.free_gpus - gpus,
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

/// One placement attempt.
///
/// # Guarantees
/// - A request is placed only on a live worker of its pool, and only after
///   its CPU, memory and GPUs were reserved there atomically.
/// - GPU types are tried in the request's order of preference; all its GPUs
///   come from one worker and one type.
/// - A request no live worker of its pool could ever take (too big, a GPU
///   type the pool does not offer, more GPUs than any worker has) fails at
///   once with that reason; one that could fit later waits, up to
///   [`PLACEMENT_DEADLINE`].
async fn place(fleet: &Fleet, id: &str) -> Result<Outcome, ApiError> {
    let Some(mut container) = fleet.container(id).await? else {
        return Ok(Outcome::Done);
    };
    if container.state != state::PENDING {
        return Ok(Outcome::Done);
    }
    let mut live = Vec::new();
    for worker_id in fleet.pool_members(&container.pool).await? {
        if !fleet.is_alive(&worker_id).await? {
            continue;
        }
        if let (Some(worker), Some(free)) = (
            fleet.worker(&worker_id).await?,
            fleet.free_capacity(&worker_id).await?,
        ) {
            live.push((worker, free));
        }
    }
    if let Some(reason) = impossible(&container, &live) {
        fail(fleet, &mut container, reason).await?;
        return Ok(Outcome::Done);
    }
    let (cpu, memory) = (
        i64::try_from(container.cpu_millicores).unwrap_or(i64::MAX),
        i64::try_from(container.memory_mib).unwrap_or(i64::MAX),
    );
    let gpu_types: Vec<Option<String>> = if container.gpu_types.is_empty() {
        vec![None]
    } else {
        container.gpu_types.iter().cloned().map(Some).collect()
    };
    for gpu_type in gpu_types {
        let gpus = if gpu_type.is_some() {
            i64::from(container.gpu_count)
        } else {
            0
        };
        let candidates: Vec<Candidate> = live
            .iter()
            .map(|(worker, free)| Candidate {
                worker_id: worker.id.clone(),
                free_cpu: free.get(super::CPU),
                free_memory: free.get(super::MEMORY),
                free_gpus: gpu_type
                    .as_deref()
                    .map_or(0, |t| free.get(&super::gpu_counter(t))),
            })
            .collect();
        container.gpu_type = gpu_type.unwrap_or_default();
        for candidate in best_fit(&candidates, cpu, memory, gpus) {
            if fleet.try_reserve(&candidate.worker_id, &container).await? {
                container.state = state::SCHEDULED.to_owned();
                container.worker_id = candidate.worker_id.clone();
                fleet.put_container(&container).await?;
                send_run(fleet, &container).await?;
                tracing::info!(container_id = %container.id, worker_id = %container.worker_id, gpu_type = %container.gpu_type, "container placed");
                return Ok(Outcome::Placed);
            }
        }
    }
    container.gpu_type.clear();
    let waited = Utc::now() - container.created_at;
    if waited.to_std().unwrap_or_default() > PLACEMENT_DEADLINE {
        let reason = format!(
            "no worker of pool {} had room for {} millicores, {} MiB and {} GPUs within {} s",
            container.pool,
            container.cpu_millicores,
            container.memory_mib,
            container.gpu_count,
            PLACEMENT_DEADLINE.as_secs()
        );
        fail(fleet, &mut container, reason).await?;
        return Ok(Outcome::Done);
    }
    Ok(Outcome::NoRoom)
}

/// Why no live worker of the pool could ever take this request, if so. With
/// no live worker at all the request waits: one may join.
fn impossible(c: &ContainerRecord, live: &[(WorkerRecord, super::FreeCapacity)]) -> Option<String> {
    if live.is_empty() {
        return None;
    }
    let largest_cpu = live
        .iter()
        .map(|(w, _)| w.cpu_millicores)
        .max()
        .unwrap_or(0);
    let largest_memory = live.iter().map(|(w, _)| w.memory_mib).max().unwrap_or(0);
    if c.cpu_millicores > largest_cpu || c.memory_mib > largest_memory {
        return Some(format!(
            "no worker of pool {} is big enough: it asks for {} millicores and {} MiB, the \
             largest worker has {largest_cpu} and {largest_memory}",
            c.pool, c.cpu_millicores, c.memory_mib
        ));
    }
    if c.gpu_types.is_empty() {
        return None;
    }
    let most = |gpu_type: &str| {
        live.iter()
            .filter_map(|(w, _)| w.gpus.iter().find(|(t, _)| t == gpu_type))
            .map(|(_, devices)| devices.len())
            .max()
    };
    let offered: Vec<(&String, usize)> = c
        .gpu_types
        .iter()
        .filter_map(|t| most(t).map(|n| (t, n)))
        .collect();
    if offered.is_empty() {
        let mut has: Vec<&str> = live
            .iter()
            .flat_map(|(w, _)| w.gpus.iter().map(|(t, _)| t.as_str()))
            .collect();
        has.sort_unstable();
        has.dedup();
        return Some(format!(
            "no worker of pool {} offers GPU {} (its workers have: {})",
            c.pool,
            c.gpu_types.join(" or "),
            if has.is_empty() {
                "no GPUs".to_owned()
            } else {
                has.join(", ")
            }
        ));
    }
    let count = c.gpu_count as usize;
    if offered.iter().all(|(_, n)| *n < count) {
        let best: Vec<String> = offered.iter().map(|(t, n)| format!("{n} {t}")).collect();
        return Some(format!(
            "no worker of pool {} has {count} GPUs of type {}: the most on one worker is {}",
            c.pool,
            c.gpu_types.join(" or "),
            best.join(", ")
        ));
    }
    None
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
            gpu_type: c.gpu_type.clone(),
            gpu_count: if c.gpu_type.is_empty() {
                0
            } else {
                c.gpu_count
            },
            objects: c
                .objects
                .iter()
                .map(|(digest, target, unpack)| ObjectMount {
                    digest: digest.clone(),
                    target: target.clone(),
                    unpack: *unpack,
                })
                .collect(),
            container_server: c.container_server,
            working_dir: c.working_dir.clone(),
            host_network: c.host_network,
        })),
    };
    fleet.send_to_worker(&c.worker_id, message).await
}

/// Puts a stop request in the inbox of a container's worker.
pub async fn send_stop(fleet: &Fleet, worker_id: &str, container_id: &str) -> Result<(), ApiError> {
    let message = ControlplaneMessage {
        kind: Some(controlplane_message::Kind::Stop(StopContainer {
            request_id: uuid::Uuid::now_v7().to_string(),
            container_id: container_id.to_owned(),
        })),
    };
    fleet.send_to_worker(worker_id, message).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(id: &str, cpu: i64, memory: i64) -> Candidate {
        Candidate {
            worker_id: id.into(),
            free_cpu: cpu,
            free_memory: memory,
            free_gpus: 0,
        }
    }

    #[test]
    fn best_fit_prefers_the_tightest_worker_that_fits() {
        let workers = [
            worker("big", 8000, 32_000),
            worker("small", 1000, 2048),
            worker("medium", 2000, 4096),
        ];
        let order: Vec<&str> = best_fit(&workers, 1500, 1024, 0)
            .iter()
            .map(|c| c.worker_id.as_str())
            .collect();
        assert_eq!(order, ["medium", "big"]);
        assert!(best_fit(&workers, 9000, 1, 0).is_empty());
        assert!(best_fit(&workers, 100, 64_000, 0).is_empty());
    }

    #[test]
    fn ties_are_broken_by_worker_id() {
        let workers = [worker("b", 1000, 1000), worker("a", 1000, 1000)];
        assert_eq!(best_fit(&workers, 500, 500, 0)[0].worker_id, "a");
    }

    #[test]
    fn gpu_requests_pack_onto_the_worker_they_fill() {
        let gpu = |id: &str, gpus: i64| Candidate {
            free_gpus: gpus,
            ..worker(id, 8000, 32_000)
        };
        let workers = [gpu("eight", 8), gpu("four", 4), gpu("two", 2)];
        let order: Vec<&str> = best_fit(&workers, 1000, 1024, 4)
            .iter()
            .map(|c| c.worker_id.as_str())
            .collect();
        assert_eq!(
            order,
            ["four", "eight"],
            "a 4-GPU request fills the 4-GPU worker"
        );
        assert_eq!(best_fit(&workers, 1000, 1024, 2)[0].worker_id, "two");
        assert!(best_fit(&workers, 1000, 1024, 9).is_empty());
    }
}
