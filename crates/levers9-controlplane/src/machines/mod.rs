//! Bring your own machines: pools made at run time next to the config's,
//! machines that join them with a single-use join token, and the rule that
//! a machine's credential may only act as that machine's worker.

pub mod download;
mod error;

pub use error::MachineError;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use levers9_config::PoolConfig;
use levers9_store::{MachineStore, PoolRecord, TokenType};

use crate::auth::Caller;

/// Prefix of join tokens, so one pasted where a token belongs (or leaked)
/// is told apart from an API token.
pub const JOIN_TOKEN_PREFIX: &str = "l9j_";

/// How long a join token works unless the admin says otherwise.
pub const DEFAULT_JOIN_TTL_SECONDS: u32 = 3600;
/// The longest a join token may work: it is a bearer secret in a file.
pub const MAX_JOIN_TTL_SECONDS: u32 = 7 * 24 * 3600;

/// A pool as users see it: from the config or made at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolView {
    /// Its name: a key of `worker.pools` or a pool made with `levers9 pool
    /// create`; unique across both.
    pub name: String,
    /// `config` or `runtime`.
    pub source: &'static str,
    /// runc or gvisor.
    pub runtime: String,
    /// Its GPU type; empty for none.
    pub gpu_type: String,
    /// When it was made; None for config pools.
    pub created_at: Option<DateTime<Utc>>,
}

/// The config's pools (authoritative for their names) and the runtime
/// ones, by name. A runtime pool whose name the config took later is
/// hidden by the config's.
pub fn merged_pools<'a>(
    configured: impl IntoIterator<Item = (&'a String, &'a PoolConfig)>,
    runtime: Vec<PoolRecord>,
) -> Vec<PoolView> {
    let mut pools: Vec<PoolView> = configured
        .into_iter()
        .map(|(name, pool)| PoolView {
            name: name.clone(),
            source: "config",
            runtime: pool.runtime.as_str().to_owned(),
            gpu_type: pool.gpu_type.clone(),
            created_at: None,
        })
        .collect();
    for record in runtime {
        if pools.iter().any(|p| p.name == record.name) {
            continue;
        }
        pools.push(PoolView {
            name: record.name,
            source: "runtime",
            runtime: record.runtime,
            gpu_type: record.gpu_type,
            created_at: Some(record.created_at),
        });
    }
    pools.sort_by(|a, b| a.name.cmp(&b.name));
    pools
}

/// Checks a pool name: it becomes part of hot-state keys and file names.
pub fn validate_pool_name(name: &str) -> Result<(), MachineError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-');
    if ok {
        return Ok(());
    }
    Err(MachineError::InvalidPoolName(name.to_owned()))
}

/// The join token's lifetime from a request: 0 for the default.
pub fn join_ttl(ttl_seconds: u32) -> Result<chrono::Duration, MachineError> {
    let seconds = if ttl_seconds == 0 {
        DEFAULT_JOIN_TTL_SECONDS
    } else {
        ttl_seconds
    };
    if seconds > MAX_JOIN_TTL_SECONDS {
        return Err(MachineError::JoinTtlTooLong { requested: seconds });
    }
    Ok(chrono::Duration::seconds(i64::from(seconds)))
}

/// What a worker token may act as: any worker, or (a machine's credential)
/// only its machine's worker.
pub enum WorkerBinding {
    /// Not a machine's credential.
    Any,
    /// The machine whose credential it is.
    Machine {
        /// Its id, also its worker's.
        id: String,
        /// Its pool: the only one its worker may register in.
        pool: String,
    },
}

impl WorkerBinding {
    /// Looks up whether the caller's token is a machine's credential. Only
    /// worker tokens can be; attach and drain are rare, so one read each.
    pub async fn of(
        machines: &Arc<dyn MachineStore>,
        caller: &Caller,
    ) -> Result<Self, MachineError> {
        if caller.token_type != TokenType::Worker {
            return Ok(WorkerBinding::Any);
        }
        Ok(match machines.machine_by_token(&caller.token_id).await? {
            Some(machine) => WorkerBinding::Machine {
                id: machine.id,
                pool: machine.pool,
            },
            None => WorkerBinding::Any,
        })
    }

    /// Refuses to act as `worker_id` of `pool` unless bound to it.
    pub fn allow(&self, worker_id: &str, pool: Option<&str>) -> Result<(), MachineError> {
        let WorkerBinding::Machine { id, pool: own_pool } = self else {
            return Ok(());
        };
        if id != worker_id {
            return Err(MachineError::OtherWorker {
                machine: id.clone(),
                worker: worker_id.to_owned(),
            });
        }
        if let Some(pool) = pool {
            if pool != own_pool {
                return Err(MachineError::OtherPool {
                    machine: id.clone(),
                    own_pool: own_pool.clone(),
                    pool: pool.to_owned(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_credential_acts_only_as_its_worker_in_its_pool() {
        let bound = WorkerBinding::Machine {
            id: "m1".into(),
            pool: "gpu".into(),
        };
        assert!(bound.allow("m1", Some("gpu")).is_ok());
        assert!(bound.allow("m1", None).is_ok());
        let other = bound.allow("m2", Some("gpu")).unwrap_err().to_string();
        assert!(other.contains("may only act as worker m1"), "{other}");
        let pool = bound.allow("m1", Some("cpu")).unwrap_err().to_string();
        assert!(pool.contains("belongs to pool gpu"), "{pool}");
        assert!(WorkerBinding::Any.allow("anything", Some("any")).is_ok());
    }

    #[test]
    fn config_pools_hide_runtime_pools_of_the_same_name() {
        let mut configured = std::collections::BTreeMap::new();
        configured.insert("gpu".to_owned(), PoolConfig::default());
        let runtime = vec![
            PoolRecord {
                name: "gpu".into(),
                runtime: "gvisor".into(),
                gpu_type: String::new(),
                created_at: DateTime::UNIX_EPOCH,
            },
            PoolRecord {
                name: "box".into(),
                runtime: "runc".into(),
                gpu_type: "L40S".into(),
                created_at: DateTime::UNIX_EPOCH,
            },
        ];
        let pools = merged_pools(&configured, runtime);
        let names: Vec<(&str, &str, &str)> = pools
            .iter()
            .map(|p| (p.name.as_str(), p.source, p.runtime.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![("box", "runtime", "runc"), ("gpu", "config", "runc")]
        );
    }

    #[test]
    fn pool_names_and_join_lifetimes_are_checked() {
        assert!(validate_pool_name("gpu-l40s").is_ok());
        for bad in ["", "GPU", "-x", "a b", "a/b"] {
            assert!(validate_pool_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(join_ttl(0).unwrap(), chrono::Duration::hours(1));
        assert_eq!(join_ttl(60).unwrap(), chrono::Duration::seconds(60));
        assert!(join_ttl(MAX_JOIN_TTL_SECONDS + 1).is_err());
    }
}
