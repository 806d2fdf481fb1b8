//! The scheduler's decision, free of I/O: given what a request asks for and
//! what the live, schedulable workers have free, where it goes, whether it
//! waits, or why it can never run.
//!
//! Pools: a request that names a pool looks only there; one that names
//! none looks at every pool that does not set `requiresPoolSelector`,
//! highest `priority` first. GPU types are tried in the request's order of
//! preference; within a type and a priority, best fit (the fewest GPUs,
//! then CPU, then memory left over) keeps large holes open for large
//! requests, so a 4-GPU request still finds the worker with 4 free.

use std::collections::BTreeMap;

use levers9_config::PoolConfig;

/// A live, schedulable worker and what it has.
#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    /// The worker's id: where the request goes if this offer is picked.
    pub worker_id: String,
    /// Its pool, which a request naming a pool must match.
    pub pool: String,
    /// Total CPU millicores.
    pub total_cpu: i64,
    /// Total memory MiB.
    pub total_memory: i64,
    /// Its GPUs: type and how many.
    pub total_gpus: Vec<(String, i64)>,
    /// Free CPU millicores.
    pub free_cpu: i64,
    /// Free memory MiB.
    pub free_memory: i64,
    /// Free GPUs by type.
    pub free_gpus: Vec<(String, i64)>,
}

impl Offer {
    fn free_gpus_of(&self, gpu_type: &str) -> i64 {
        count_of(&self.free_gpus, gpu_type)
    }

    fn total_gpus_of(&self, gpu_type: &str) -> i64 {
        count_of(&self.total_gpus, gpu_type)
    }

    /// Takes a placed request's share from what this offer has free.
    pub(crate) fn take(&mut self, ask: &Ask, gpu_type: Option<&str>) {
        self.free_cpu -= ask.cpu;
        self.free_memory -= ask.memory;
        if let Some(t) = gpu_type {
            if let Some((_, n)) = self.free_gpus.iter_mut().find(|(g, _)| g == t) {
                *n -= ask.gpus;
            }
        }
    }
}

fn count_of(counts: &[(String, i64)], gpu_type: &str) -> i64 {
    counts
        .iter()
        .find(|(t, _)| t == gpu_type)
        .map_or(0, |(_, n)| *n)
}

/// What a request asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// The pool it names; empty for any pool that takes unnamed requests.
    pub pool: String,
    /// CPU millicores.
    pub cpu: i64,
    /// Memory MiB.
    pub memory: i64,
    /// GPU types in order of preference; empty for none.
    pub gpu_types: Vec<String>,
    /// GPUs wanted, all of one type (0 without types).
    pub gpus: i64,
}

/// Where a request goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// Index of the best offer. If reserving there fails (another replica
    /// was first), the request is decided again on a corrected picture.
    pub offer: usize,
    /// The GPU type it gets; None without GPUs.
    pub gpu_type: Option<String>,
}

/// The scheduler's answer for one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Reserve there.
    Place(Choice),
    /// Nothing has room now; something may later.
    Wait,
    /// No worker could ever take it: the reason, for the task or container.
    Fail(String),
}

/// The configured pools, and what the scheduler reads of them.
#[derive(Debug, Clone, Default)]
pub struct Pools {
    configured: BTreeMap<String, PoolConfig>,
    job_resources_enforced: bool,
}

impl Pools {
    /// The pools of `worker.pools`; `job_resources_enforced` is
    /// `worker.jobResourcesEnforced`, named in the advice when a GPU pool's
    /// workers see no GPU.
    pub(crate) fn new(
        configured: BTreeMap<String, PoolConfig>,
        job_resources_enforced: bool,
    ) -> Self {
        Self {
            configured,
            job_resources_enforced,
        }
    }

    /// The same pools with `worker.jobResourcesEnforced` set to `enforced`.
    pub(crate) fn enforce_job_resources(mut self, enforced: bool) -> Self {
        self.job_resources_enforced = enforced;
        self
    }

    /// The pool `name` of `worker.pools`; `None` for a pool made at run time.
    pub(crate) fn get(&self, name: &str) -> Option<&PoolConfig> {
        self.configured.get(name)
    }

    /// Every configured pool, by name.
    pub(crate) fn configured(&self) -> impl Iterator<Item = (&String, &PoolConfig)> {
        self.configured.iter()
    }

    /// Whether `name` is configured.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.configured.contains_key(name)
    }

    fn priority(&self, pool: &str) -> i32 {
        self.configured.get(pool).map_or(0, |p| p.priority)
    }

    /// Whether a request for `ask.pool` may use `pool`.
    fn admits(&self, ask: &Ask, pool: &str) -> bool {
        if ask.pool.is_empty() {
            !self
                .configured
                .get(pool)
                .is_some_and(|p| p.requires_pool_selector)
        } else {
            ask.pool == pool
        }
    }
}

/// Decides where `ask` goes among `offers`.
///
/// # Guarantees
/// - Only offers of pools the request admits are chosen, with room for its
///   CPU, memory and all its GPUs of one type.
/// - An earlier GPU type in the request's list always wins over a later
///   one; then a higher pool priority; then the best fit; ties by worker id
///   (`offers` must be sorted by worker id).
/// - O(offers) per GPU type: one pass for the best, no sort of the fleet.
/// - `Fail` only when no live worker of those pools could ever take it,
///   and there is at least one such worker (with none, one may join).
pub fn decide(ask: &Ask, offers: &[Offer], pools: &Pools) -> Decision {
    let admitted: Vec<usize> = (0..offers.len())
        .filter(|&i| pools.admits(ask, &offers[i].pool))
        .collect();
    if admitted.is_empty() {
        return match no_gpu_pool(ask, pools) {
            Some(reason) => Decision::Fail(reason),
            None => Decision::Wait,
        };
    }
    if let Some(reason) = impossible(ask, offers, &admitted, pools) {
        return Decision::Fail(reason);
    }
    let types: Vec<Option<&str>> = if ask.gpu_types.is_empty() {
        vec![None]
    } else {
        ask.gpu_types.iter().map(|t| Some(t.as_str())).collect()
    };
    for gpu_type in types {
        let gpus = if gpu_type.is_some() { ask.gpus } else { 0 };
        let fits = |o: &Offer| {
            o.free_cpu >= ask.cpu
                && o.free_memory >= ask.memory
                && gpu_type.map_or(0, |t| o.free_gpus_of(t)) >= gpus
        };
        let key = |i: usize| {
            let o = &offers[i];
            let free_gpus = gpu_type.map_or(0, |t| o.free_gpus_of(t));
            // A request without GPUs keeps off GPU workers while others fit.
            let idle_gpus: i64 = if gpu_type.is_none() {
                o.total_gpus.iter().map(|(_, n)| n).sum()
            } else {
                0
            };
            // Offers come sorted by worker id, so the index breaks ties the
            // way every replica does.
            (
                -pools.priority(&o.pool),
                idle_gpus.min(1),
                free_gpus - gpus,
                o.free_cpu - ask.cpu,
                o.free_memory - ask.memory,
                i,
            )
        };
        let best = admitted
            .iter()
            .copied()
            .filter(|&i| fits(&offers[i]))
            .min_by_key(|&i| key(i));
        if let Some(offer) = best {
            return Decision::Place(Choice {
                offer,
                gpu_type: gpu_type.map(str::to_owned),
            });
        }
    }
    Decision::Wait
}

/// With no live worker in the admitted pools: a GPU request that no
/// configured pool offers fails at once when the pools are configured
/// with their GPU types; otherwise it waits for a worker to join.
fn no_gpu_pool(ask: &Ask, pools: &Pools) -> Option<String> {
    if ask.gpu_types.is_empty() {
        return None;
    }
    let admitted: Vec<(&String, &PoolConfig)> = pools
        .configured
        .iter()
        .filter(|(name, _)| pools.admits(ask, name))
        .collect();
    // Unconfigured pools are joined by workers with any inventory.
    if admitted.is_empty() || (!ask.pool.is_empty() && !pools.contains(&ask.pool)) {
        return None;
    }
    if admitted
        .iter()
        .any(|(_, p)| p.gpu_type.is_empty() || ask.gpu_types.contains(&p.gpu_type))
    {
        return None;
    }
    Some(no_pool_offers(
        ask,
        admitted
            .iter()
            .map(|(n, p)| (n.as_str(), p.gpu_type.clone())),
    ))
}

fn no_pool_offers<'a>(ask: &Ask, offered: impl Iterator<Item = (&'a str, String)>) -> String {
    let mut has: Vec<String> = offered
        .filter(|(_, t)| !t.is_empty())
        .map(|(pool, t)| format!("{pool}: {t}"))
        .collect();
    has.sort_unstable();
    has.dedup();
    let wanted = ask.gpu_types.join(" or ");
    let offered = if has.is_empty() {
        "none has GPUs".to_owned()
    } else {
        format!("offered: {}", has.join(", "))
    };
    if ask.pool.is_empty() {
        format!("no pool offers GPU {wanted} ({offered})")
    } else {
        format!(
            "no pool offers GPU {wanted}: pool {} does not ({offered})",
            ask.pool
        )
    }
}

/// Why no admitted live worker could ever take this request, if so.
fn impossible(ask: &Ask, offers: &[Offer], admitted: &[usize], pools: &Pools) -> Option<String> {
    let live = || admitted.iter().map(|&i| &offers[i]);
    let where_ = if ask.pool.is_empty() {
        "no worker".to_owned()
    } else {
        format!("no worker of pool {}", ask.pool)
    };
    let largest_cpu = live().map(|o| o.total_cpu).max().unwrap_or(0);
    let largest_memory = live().map(|o| o.total_memory).max().unwrap_or(0);
    if ask.cpu > largest_cpu || ask.memory > largest_memory {
        return Some(format!(
            "{where_} is big enough: it asks for {} millicores and {} MiB, the largest worker \
             has {largest_cpu} and {largest_memory}",
            ask.cpu, ask.memory
        ));
    }
    if ask.gpu_types.is_empty() {
        return None;
    }
    let most = |t: &str| live().map(|o| o.total_gpus_of(t)).max().unwrap_or(0);
    let offered: Vec<(&String, i64)> = ask
        .gpu_types
        .iter()
        .map(|t| (t, most(t)))
        .filter(|(_, n)| *n > 0)
        .collect();
    if offered.is_empty() {
        // A pool configured for one of these types whose workers see no
        // GPU: the seed's symptom of worker pods that did not ask for one.
        let blind: Vec<(&str, &str)> = live()
            .filter_map(|o| {
                let p = pools.get(&o.pool)?;
                ask.gpu_types
                    .contains(&p.gpu_type)
                    .then_some((o.pool.as_str(), p.gpu_type.as_str()))
            })
            .collect();
        if let Some((pool, gpu_type)) = blind.first() {
            let fix = if pools.job_resources_enforced {
                "check that the NVIDIA device plugin runs on the pool's nodes \
                 (kubectl describe node shows nvidia.com/gpu)"
            } else {
                "on Kubernetes set worker.jobResourcesEnforced: true so worker pods request \
                 nvidia.com/gpu; elsewhere start the workers with --gpu TYPE:IDS"
            };
            return Some(format!(
                "not enough GPUs available: pool {pool} offers {gpu_type} \
                 (worker.pools.{pool}.gpuType) but its workers see no GPU; {fix}"
            ));
        }
        let mut by_pool: Vec<(&str, String)> = Vec::new();
        for o in live() {
            for (t, _) in &o.total_gpus {
                by_pool.push((o.pool.as_str(), t.clone()));
            }
        }
        return Some(no_pool_offers(ask, by_pool.into_iter()));
    }
    if offered.iter().all(|(_, n)| *n < ask.gpus) {
        let best: Vec<String> = offered.iter().map(|(t, n)| format!("{n} {t}")).collect();
        return Some(format!(
            "not enough GPUs available: {where_} has {} GPUs of type {}: the most on one worker \
             is {}",
            ask.gpus,
            ask.gpu_types.join(" or "),
            best.join(", ")
        ));
    }
    None
}

#[cfg(test)]
mod tests;
