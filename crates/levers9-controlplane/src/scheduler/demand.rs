//! Workers wanted per pool: what a pool's provider (worker Jobs of a
//! `provider: kubernetes` pool, an attached cluster's agent) scales to.
//!
//! # The rule
//! With `waiting` requests that found no room in the pool, `present` live
//! workers, `busy` of them running at least one container, and the pool's
//! `scaling` (`minWorkers`, `maxWorkers`, `requestsPerWorker`):
//! ```text
//!  waiting > 0         : present + ceil(waiting / requestsPerWorker)
//!  waiting = 0, busy > 0: present          (never scale down under work)
//!  waiting = 0, busy = 0: minWorkers       (idle)
//! ```
//! always clamped to `minWorkers ..= maxWorkers`.
//!
//! A waiting request counts for the pool it names; one that names none for
//! the configured pool it would land in first (highest priority, a GPU
//! type it accepts). The scheduler notes each request it must put back in
//! the backlog in the set `pool-waiting:<pool>`; a reading drops the
//! members that are no longer pending, so a placed or failed request stops
//! counting within one reading.

use std::time::Duration;

use levers9_config::{PoolConfig, PoolScaling};
use levers9_state::{keys, Kv, StateError, Write};

use super::placement::Ask;
use super::Scheduling;
use crate::error::ApiError;
use crate::fleet::records::{ContainerRecord, ContainerState};
use crate::fleet::Fleet;

/// How long an attached cluster's pool stays known after its agent last
/// asked: a few of the agents' 10 s rounds.
const AGENT_SEEN_TTL: Duration = Duration::from_secs(60);

/// Whether an attached cluster's agent asked for `pool` lately: its pool is
/// built in code, so it is in no config, and with no worker it still takes
/// requests (they are what make the agent start one). Over `state`, not a
/// [`Scheduling`], because the fleet asks it when it admits a pool; only
/// keys are read.
pub async fn has_agent(state: &dyn Kv, pool: &str) -> Result<bool, StateError> {
    Ok(state.get(&keys::cluster_agent(pool)).await?.is_some())
}

/// Notes that an agent asked for `pool`.
pub async fn note_agent(scheduling: &Scheduling, pool: &str) -> Result<(), ApiError> {
    Ok(scheduling
        .state
        .set_with_ttl(&keys::cluster_agent(pool), b"1", AGENT_SEEN_TTL)
        .await?)
}

/// One pool's demand and the workers it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demand {
    /// Requests waiting for room in the pool.
    pub waiting: u64,
    /// Live workers of the pool.
    pub present: u32,
    /// Those running at least one container.
    pub busy: u32,
    /// The pool's `scaling` (`minWorkers`, `maxWorkers`, `requestsPerWorker`)
    /// that `wanted` was worked out with.
    pub scaling: PoolScaling,
    /// Workers wanted, by [the rule](self).
    pub wanted: u32,
}

/// The rule, free of I/O.
pub fn workers_wanted(waiting: u64, present: u32, busy: u32, scaling: &PoolScaling) -> u32 {
    let wanted = if waiting > 0 {
        let per_worker = u64::from(scaling.requests_per_worker.max(1));
        let more = u32::try_from(waiting.div_ceil(per_worker)).unwrap_or(u32::MAX);
        present.saturating_add(more)
    } else if busy > 0 {
        present
    } else {
        scaling.min_workers
    };
    wanted.clamp(
        scaling.min_workers,
        scaling.max_workers.max(scaling.min_workers),
    )
}

/// The pool a request that found no room waits for: the one it names, or
/// the configured pool it would land in first. None when no configured pool
/// could take it (it then waits for any worker to join).
pub fn waiting_pool<'a>(
    ask: &'a Ask,
    configured: impl Iterator<Item = (&'a String, &'a PoolConfig)>,
) -> Option<&'a str> {
    if !ask.pool.is_empty() {
        return Some(&ask.pool);
    }
    configured
        .filter(|(_, p)| !p.requires_pool_selector)
        .filter(|(_, p)| {
            if ask.gpu_types.is_empty() {
                p.gpu_type.is_empty()
            } else {
                ask.gpu_types.contains(&p.gpu_type)
            }
        })
        // Highest priority first; the name breaks ties the same way on
        // every replica.
        .min_by_key(|(name, p)| (-p.priority, name.as_str()))
        .map(|(name, _)| name.as_str())
}

/// The write that counts `container`, which found no room, in its pool's
/// demand; None when no configured pool would take it. A scheduler pass
/// writes those of its batch together.
pub fn waiting_write(fleet: &Fleet, ask: &Ask, container: &ContainerRecord) -> Option<Write> {
    let pool = waiting_pool(ask, fleet.pools().configured())?;
    Some(Write::SetAdd {
        set: keys::pool_waiting(pool),
        member: container.id.clone(),
    })
}

/// Reads `pool`'s demand. `asked` are the bounds a caller proposes for a
/// pool that is not configured (an attached cluster's, built in code); a
/// configured pool's own `scaling` always wins.
pub async fn read(
    scheduling: &Scheduling,
    pool: &str,
    asked: Option<PoolScaling>,
) -> Result<Demand, ApiError> {
    let fleet = &scheduling.fleet;
    let scaling = match fleet.pool_config(pool) {
        Some(config) => config.scaling.clone(),
        None => asked.unwrap_or_default(),
    };
    let set = keys::pool_waiting(pool);
    let mut waiting = 0;
    for id in scheduling.state.set_members(&set).await? {
        match fleet.container(&id).await? {
            Some(c) if c.state == ContainerState::Pending => waiting += 1,
            _ => {
                scheduling.state.set_remove(&set, &id).await?;
            }
        }
    }
    let (mut present, mut busy) = (0u32, 0u32);
    for id in fleet.pool_members(pool).await? {
        if !fleet.is_alive(&id).await? {
            continue;
        }
        present += 1;
        if !fleet.worker_containers(&id).await?.is_empty() {
            busy += 1;
        }
    }
    let wanted = workers_wanted(waiting, present, busy, &scaling);
    Ok(Demand {
        waiting,
        present,
        busy,
        scaling,
        wanted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scaling(min: u32, max: u32, per_worker: u32) -> PoolScaling {
        PoolScaling {
            min_workers: min,
            max_workers: max,
            requests_per_worker: per_worker,
        }
    }

    #[test]
    fn a_backlog_with_no_workers_asks_for_enough_to_take_it() {
        assert_eq!(workers_wanted(5, 0, 0, &scaling(0, 10, 2)), 3);
    }

    #[test]
    fn the_maximum_caps_a_flood() {
        assert_eq!(workers_wanted(1000, 2, 2, &scaling(0, 4, 1)), 4);
    }

    #[test]
    fn new_workers_come_on_top_of_the_present_ones() {
        assert_eq!(workers_wanted(1, 3, 3, &scaling(0, 10, 1)), 4);
    }

    #[test]
    fn busy_workers_are_kept_while_nothing_waits() {
        assert_eq!(workers_wanted(0, 3, 1, &scaling(0, 10, 1)), 3);
    }

    #[test]
    fn an_idle_pool_goes_down_to_its_minimum() {
        assert_eq!(workers_wanted(0, 3, 0, &scaling(1, 10, 1)), 1);
        assert_eq!(workers_wanted(0, 0, 0, &scaling(2, 10, 1)), 2);
    }

    fn ask(pool: &str, gpu_types: &[&str]) -> Ask {
        Ask {
            pool: pool.into(),
            cpu: 1,
            memory: 1,
            gpu_types: gpu_types.iter().map(|t| (*t).to_owned()).collect(),
            gpus: i64::from(!gpu_types.is_empty()),
        }
    }

    fn pools() -> Vec<(String, PoolConfig)> {
        let pool = |gpu: &str, priority: i32, requires: bool| PoolConfig {
            gpu_type: gpu.into(),
            priority,
            requires_pool_selector: requires,
            ..PoolConfig::default()
        };
        vec![
            ("build".into(), pool("", 0, true)),
            ("cpu".into(), pool("", 1, false)),
            ("l40s".into(), pool("L40S", 0, false)),
            ("h100".into(), pool("H100", 5, false)),
        ]
    }

    fn waits_for(ask: &Ask) -> Option<String> {
        let pools = pools();
        waiting_pool(ask, pools.iter().map(|(n, p)| (n, p))).map(str::to_owned)
    }

    #[test]
    fn a_request_waits_for_the_pool_it_would_land_in() {
        assert_eq!(waits_for(&ask("build", &[])).as_deref(), Some("build"));
        assert_eq!(waits_for(&ask("", &[])).as_deref(), Some("cpu"));
        assert_eq!(
            waits_for(&ask("", &["L40S", "H100"])).as_deref(),
            Some("h100")
        );
        assert_eq!(waits_for(&ask("", &["A100"])), None);
    }
}
