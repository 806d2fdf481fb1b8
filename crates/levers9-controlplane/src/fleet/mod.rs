//! The fleet: workers, their capacity and the containers placed on them, kept
//! in the hot state so any controlplane replica can answer for any of them.
//!
//! Keys (each under the hot state's prefix and kind):
//! - kv `worker:<id>`: [`WorkerRecord`]; kv `worker-alive:<id>`: present
//!   while the worker heartbeats (expires after the heartbeat TTL);
//! - capacity `worker:<id>`: free `cpu` and `memory` counters;
//! - sets `workers`, `pool:<name>`, `worker-containers:<id>`,
//!   `workspace-containers:<id>`, `cordoned-workers`;
//! - queue `worker-inbox:<id>` (requests for the replica holding that
//!   worker's stream);
//! - kv `container:<id>`: [`ContainerRecord`]; log and channel
//!   `container:<id>`: its output and events.
//!
//! The requests waiting for a place are the scheduler's
//! ([`crate::scheduler`]).

pub mod attach;
mod error;
pub mod inbox;
mod notices;
mod output;
pub mod provider;
pub mod reaper;
pub mod records;

pub use error::FleetError;
pub use notices::{FleetNotice, NoticeSink};
pub(crate) use output::follow_logs;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use levers9_api::v1::ControlplaneMessage;
use levers9_config::{JuiceFsConfig, PoolConfig, WorkerConfig};
use levers9_image::RegistryKeychain;
use levers9_state::{keys, HotState, Reservation, Reserve, Write};
use levers9_store::MachineStore;

use crate::scheduler::{demand, placement, view};
use records::{decode, encode, ContainerRecord, WorkerRecord};

/// How long records outlive their last change: long enough to list and read
/// the logs of recent containers, short enough to bound the hot state.
const RECORD_TTL: Duration = Duration::from_secs(24 * 3600);
/// Log entries kept per container after it ends.
pub const MAX_LOG_ENTRIES: u64 = 10_000;

/// Capacity counter names.
pub const CPU: &str = "cpu";
/// Capacity counter names.
pub const MEMORY: &str = "memory";

/// The capacity counter of one GPU type.
pub fn gpu_counter(gpu_type: &str) -> String {
    format!("gpu:{gpu_type}")
}

/// Access to the fleet's records.
#[derive(Clone)]
pub struct Fleet {
    state: Arc<dyn HotState>,
    heartbeat_ttl: Duration,
    pools: Arc<placement::Pools>,
    /// Who hears that containers end and workers drain.
    notices: Arc<dyn NoticeSink>,
    local_inboxes: Arc<inbox::LocalInboxes>,
    runtime_pools: Option<Arc<dyn MachineStore>>,
    /// Whether volumes live in JuiceFS, where a workspace's own storage
    /// credentials mount its file system (local volumes never use them).
    workspace_volume_storage: bool,
    /// The `worker` section whose hardening keys workers get on attach.
    worker_config: Arc<WorkerConfig>,
    /// `storage.juicefs` as workers get it on attach (secrets inside:
    /// never logged); empty while volumes are local.
    worker_storage_json: Arc<String>,
    /// Registry credentials build containers get as they go to a worker.
    registry_keychain: RegistryKeychain,
}

impl Fleet {
    /// A fleet over `state`; workers are lost after `heartbeat_ttl` of
    /// silence; `pools` are the configured pools (`worker.pools`);
    /// `notices` hears that containers end and workers drain (the function
    /// dispatcher).
    pub fn new(
        state: Arc<dyn HotState>,
        heartbeat_ttl: Duration,
        pools: BTreeMap<String, PoolConfig>,
        notices: Arc<dyn NoticeSink>,
    ) -> Self {
        Self {
            state,
            heartbeat_ttl,
            pools: Arc::new(placement::Pools::new(pools, false)),
            notices,
            local_inboxes: Arc::default(),
            runtime_pools: None,
            workspace_volume_storage: false,
            worker_config: Arc::default(),
            worker_storage_json: Arc::default(),
            registry_keychain: RegistryKeychain::default(),
        }
    }

    /// Where the pools made at run time (`levers9 pool create`) are, so
    /// containers may name one before a machine has joined it.
    pub fn with_runtime_pools(mut self, store: Arc<dyn MachineStore>) -> Self {
        self.runtime_pools = Some(store);
        self
    }

    /// Hands a workspace's own storage credentials to the worker of each
    /// of its containers with volumes (volumes in JuiceFS).
    pub fn with_workspace_volume_storage(mut self, on: bool) -> Self {
        self.workspace_volume_storage = on;
        self
    }

    /// Whether containers with volumes get their workspace's storage
    /// credentials.
    pub fn workspace_volume_storage(&self) -> bool {
        self.workspace_volume_storage
    }

    /// Puts a request in a worker's inbox.
    pub async fn send_to_worker(
        &self,
        worker_id: &str,
        message: ControlplaneMessage,
    ) -> Result<(), FleetError> {
        inbox::send(self, worker_id, message).await
    }

    /// Sets `worker.jobResourcesEnforced`, which the scheduler's advice
    /// names when a GPU pool's workers see no GPU.
    pub fn with_job_resources_enforced(mut self, enforced: bool) -> Self {
        let pools = placement::Pools::clone(&self.pools);
        self.pools = Arc::new(pools.enforce_job_resources(enforced));
        self
    }

    /// The `worker` section whose hardening keys each worker gets when it
    /// attaches (see [`Fleet::worker_settings_json`]).
    pub fn with_worker_config(mut self, config: WorkerConfig) -> Self {
        self.worker_config = Arc::new(config);
        self
    }

    /// The hardening keys for a worker of `pool`, as `Registered` carries
    /// them (see worker.proto).
    pub fn worker_settings_json(&self, pool: &str) -> String {
        self.worker_config.hardening_json_for(pool)
    }

    /// `worker.spares`, which each worker keeps unless its own config sets
    /// more (see worker.proto).
    pub fn worker_spares(&self) -> u32 {
        self.worker_config.spares
    }

    /// The volumes' JuiceFS file system, which each worker gets when it
    /// attaches so that one started without `storage.juicefs` of its own
    /// mounts the same volumes (see [`Fleet::worker_storage_json`]).
    pub fn with_worker_storage(mut self, juicefs: &JuiceFsConfig) -> Self {
        self.worker_storage_json = Arc::new(juicefs.delivered_json());
        self
    }

    /// `storage.juicefs` as `Registered` carries it (see worker.proto):
    /// it holds the metadata password and the bucket keys, so it only goes
    /// on an authenticated worker stream and is never logged.
    pub fn worker_storage_json(&self) -> String {
        String::clone(&self.worker_storage_json)
    }

    /// The registry credentials that containers naming registries (image
    /// builds) get as they go to their worker.
    pub fn with_registry_keychain(mut self, keychain: RegistryKeychain) -> Self {
        self.registry_keychain = keychain;
        self
    }

    /// See [`Fleet::with_registry_keychain`].
    pub fn registry_keychain(&self) -> &RegistryKeychain {
        &self.registry_keychain
    }

    /// The configuration of a pool, if it is configured.
    pub fn pool_config(&self, pool: &str) -> Option<&PoolConfig> {
        self.pools.get(pool)
    }

    /// The configured pools, as the scheduler reads them.
    pub fn pools(&self) -> &placement::Pools {
        &self.pools
    }

    /// Cordons a worker (no new placements) or lifts it.
    pub async fn set_cordoned(&self, worker_id: &str, cordoned: bool) -> Result<(), FleetError> {
        if cordoned {
            self.state.set_add(view::CORDONED, worker_id).await?;
        } else {
            self.state.set_remove(view::CORDONED, worker_id).await?;
        }
        Ok(())
    }

    /// Cordons a worker and drains it (its function containers take no
    /// new inputs and stop once idle), or lifts both.
    pub async fn set_draining(&self, worker_id: &str, draining: bool) -> Result<(), FleetError> {
        self.set_cordoned(worker_id, draining).await?;
        Ok(self
            .notices
            .tell(FleetNotice::Drain {
                worker_id: worker_id.to_owned(),
                draining,
            })
            .await?)
    }

    /// The ids of the cordoned workers: nothing new is placed on them.
    pub async fn cordoned(&self) -> Result<Vec<String>, FleetError> {
        Ok(self.state.set_members(view::CORDONED).await?)
    }

    /// Refuses a pool containers may not ask for: one neither configured,
    /// nor made at run time, nor joined by a worker, nor asked for by an
    /// attached cluster's agent. Empty means any pool.
    pub async fn require_pool(&self, pool: &str) -> Result<(), FleetError> {
        if pool.is_empty()
            || self.pools.contains(pool)
            || !self.pool_members(pool).await?.is_empty()
            || demand::has_agent(self.state.as_ref(), pool).await?
        {
            return Ok(());
        }
        if let Some(store) = &self.runtime_pools {
            if store.get_pool(pool).await?.is_some() {
                return Ok(());
            }
        }
        Err(FleetError::UnknownPool(pool.to_owned()))
    }

    /// The heartbeat TTL.
    pub fn heartbeat_ttl(&self) -> Duration {
        self.heartbeat_ttl
    }

    /// Stores a worker record.
    pub async fn put_worker(&self, worker: &WorkerRecord) -> Result<(), FleetError> {
        self.update_worker(worker).await?;
        self.state.set_add("workers", &worker.id).await?;
        self.state
            .set_add(&keys::pool_workers(&worker.pool), &worker.id)
            .await?;
        Ok(())
    }

    /// Rewrites the record of a registered worker (its last heartbeat): the
    /// set memberships were made when it registered.
    pub async fn update_worker(&self, worker: &WorkerRecord) -> Result<(), FleetError> {
        let key = keys::worker(&worker.id);
        self.state
            .set_with_ttl(&key, &encode(worker), RECORD_TTL)
            .await?;
        Ok(())
    }

    /// The worker's record; `None` when the hot state has none (never
    /// registered, or expired).
    pub async fn worker(&self, id: &str) -> Result<Option<WorkerRecord>, FleetError> {
        match self.state.get(&keys::worker(id)).await? {
            Some(bytes) => Ok(Some(decode("worker record", &bytes)?)),
            None => Ok(None),
        }
    }

    /// Every known worker id.
    pub async fn worker_ids(&self) -> Result<Vec<String>, FleetError> {
        Ok(self.state.set_members("workers").await?)
    }

    /// The ids of the workers of a pool.
    pub async fn pool_members(&self, pool: &str) -> Result<Vec<String>, FleetError> {
        Ok(self.state.set_members(&keys::pool_workers(pool)).await?)
    }

    /// Records a heartbeat: the worker stays alive for one more TTL.
    pub async fn touch_alive(&self, id: &str) -> Result<(), FleetError> {
        self.state
            .set_with_ttl(&keys::worker_alive(id), b"1", self.heartbeat_ttl)
            .await?;
        Ok(())
    }

    /// Whether the worker heartbeated within the TTL.
    pub async fn is_alive(&self, id: &str) -> Result<bool, FleetError> {
        Ok(self.state.get(&keys::worker_alive(id)).await?.is_some())
    }

    /// Forgets a worker that is gone: its capacity, set memberships and
    /// cordon.
    pub async fn remove_worker(&self, worker: &WorkerRecord) -> Result<(), FleetError> {
        self.state
            .delete_capacity(&keys::worker(&worker.id))
            .await?;
        self.state.set_remove("workers", &worker.id).await?;
        self.state
            .set_remove(&keys::pool_workers(&worker.pool), &worker.id)
            .await?;
        self.state.set_remove(view::CORDONED, &worker.id).await?;
        Ok(())
    }

    /// Free capacity of a worker: every counter (`cpu`, `memory`,
    /// `gpu:<type>`) with what is not reserved.
    pub async fn free_capacity(&self, id: &str) -> Result<Option<FreeCapacity>, FleetError> {
        let counters = self.state.get_capacity(&keys::worker(id)).await?;
        Ok(counters.map(|counters| FreeCapacity { counters }))
    }

    /// Sets a worker's free capacity counters.
    pub async fn set_free_capacity(
        &self,
        id: &str,
        counters: &[(String, i64)],
    ) -> Result<(), FleetError> {
        self.state
            .set_capacity(&keys::worker(id), &named(counters))
            .await?;
        Ok(())
    }

    /// Atomically takes each container's resources from the worker named
    /// with it, in order, in one round trip: one result each, a refused one
    /// with what that worker had left.
    pub async fn try_reserve_batch(
        &self,
        placements: &[(&str, &ContainerRecord)],
    ) -> Result<Vec<Reservation>, FleetError> {
        let keys: Vec<String> = placements
            .iter()
            .map(|(worker_id, _)| keys::worker(worker_id))
            .collect();
        let amounts: Vec<Vec<(String, i64)>> =
            placements.iter().map(|(_, c)| c.amounts()).collect();
        let counters: Vec<Vec<(&str, i64)>> = amounts.iter().map(|a| named(a)).collect();
        let reservations: Vec<Reserve> = keys
            .iter()
            .zip(&counters)
            .map(|(key, amounts)| Reserve { key, amounts })
            .collect();
        Ok(self.state.try_reserve_batch(&reservations).await?)
    }

    /// Gives a container's resources back to its worker.
    pub async fn release(&self, worker_id: &str, c: &ContainerRecord) -> Result<(), FleetError> {
        self.state
            .release(&keys::worker(worker_id), &named(&c.amounts()))
            .await?;
        Ok(())
    }

    /// Stores a container record (and indexes it for its workspace).
    pub async fn put_container(&self, c: &ContainerRecord) -> Result<(), FleetError> {
        self.put_containers(std::slice::from_ref(c)).await
    }

    /// Stores container records and their indexes, in one round trip.
    pub async fn put_containers(&self, containers: &[ContainerRecord]) -> Result<(), FleetError> {
        let mut writes = Vec::with_capacity(containers.len() * 3);
        for c in containers {
            writes.push(Write::Set {
                key: keys::container(&c.id),
                value: encode(c),
                ttl: RECORD_TTL,
            });
            writes.push(Write::SetAdd {
                set: keys::workspace_containers(&c.workspace_id),
                member: c.id.clone(),
            });
            if !c.worker_id.is_empty() {
                let set = keys::worker_containers(&c.worker_id);
                let member = c.id.clone();
                writes.push(if c.state.is_final() {
                    Write::SetRemove { set, member }
                } else {
                    Write::SetAdd { set, member }
                });
            }
        }
        Ok(self.state.write_batch(&writes).await?)
    }

    /// The container's record; `None` when the hot state has none (never
    /// requested, or expired).
    pub async fn container(&self, id: &str) -> Result<Option<ContainerRecord>, FleetError> {
        match self.state.get(&keys::container(id)).await? {
            Some(bytes) => Ok(Some(decode("container record", &bytes)?)),
            None => Ok(None),
        }
    }

    /// Many container records, in one round trip: one result each, in
    /// order (an error for a record that cannot be read).
    pub async fn containers(
        &self,
        ids: &[String],
    ) -> Result<Vec<Result<Option<ContainerRecord>, FleetError>>, FleetError> {
        let keys: Vec<String> = ids.iter().map(|id| keys::container(id)).collect();
        Ok(self
            .state
            .get_many(&keys)
            .await?
            .into_iter()
            .map(|bytes| bytes.map(|b| decode("container record", &b)).transpose())
            .collect())
    }

    /// The containers of a workspace that are still on record.
    pub async fn workspace_containers(
        &self,
        workspace_id: &str,
    ) -> Result<Vec<ContainerRecord>, FleetError> {
        let set = keys::workspace_containers(workspace_id);
        let mut out = Vec::new();
        for id in self.state.set_members(&set).await? {
            match self.container(&id).await? {
                Some(c) => out.push(c),
                // Expired: drop it from the index too.
                None => {
                    self.state.set_remove(&set, &id).await?;
                }
            }
        }
        out.sort_by_key(|c| c.created_at);
        Ok(out)
    }

    /// The ids of the unfinished containers placed on a worker.
    pub async fn worker_containers(&self, worker_id: &str) -> Result<Vec<String>, FleetError> {
        Ok(self
            .state
            .set_members(&keys::worker_containers(worker_id))
            .await?)
    }
}

/// Checks a GPU request (types in order of preference, a count) and
/// returns the count it stands for: 0 without types, at least 1 with.
pub fn gpu_count(gpu_types: &[String], count: u32) -> Result<u32, FleetError> {
    if gpu_types.is_empty() {
        if count > 0 {
            return Err(FleetError::GpuCountWithoutType);
        }
        return Ok(0);
    }
    if gpu_types.iter().any(|t| t.is_empty()) || gpu_types.len() > 8 {
        return Err(FleetError::InvalidGpuTypes);
    }
    Ok(count.max(1))
}

/// The channel message that says "the container ended; read its record".
pub const END_MARKER: &[u8] = b"end";

fn named(counters: &[(String, i64)]) -> Vec<(&str, i64)> {
    counters.iter().map(|(n, v)| (n.as_str(), *v)).collect()
}

/// A worker's free capacity counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FreeCapacity {
    /// Counter name and free amount.
    pub counters: Vec<(String, i64)>,
}

impl FreeCapacity {
    /// The free amount of one counter (0 when absent).
    pub fn get(&self, name: &str) -> i64 {
        self.counters
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    }
}
