//! Each replica's picture of the fleet: the live, schedulable workers and
//! what they have free, read from the hot state in the background so a
//! decision costs no round trip per worker.
//!
//! The picture may be stale; that is safe because a placement still takes
//! its capacity with the hot state's atomic reservation, and a refused
//! reservation reports what its worker really has, which corrects the
//! picture at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::placement::Offer;
use super::Scheduling;
use crate::error::ApiError;
use crate::fleet::records::WorkerRecord;
use crate::fleet::{gpu_counter, FreeCapacity, CPU, MEMORY};

/// How often the picture is read again.
const REFRESH: Duration = Duration::from_millis(500);

/// The set of cordoned workers (no new placements).
pub(crate) const CORDONED: &str = "cordoned-workers";

/// An offer built from a worker's record and free counters.
pub fn offer(worker: &WorkerRecord, free: &FreeCapacity) -> Offer {
    let total_gpus: Vec<(String, i64)> = worker
        .gpus
        .iter()
        .map(|(t, devices)| (t.clone(), i64::try_from(devices.len()).unwrap_or(i64::MAX)))
        .collect();
    Offer {
        worker_id: worker.id.clone(),
        pool: worker.pool.clone(),
        total_cpu: i64::try_from(worker.cpu_millicores).unwrap_or(i64::MAX),
        total_memory: i64::try_from(worker.memory_mib).unwrap_or(i64::MAX),
        free_gpus: total_gpus
            .iter()
            .map(|(t, _)| (t.clone(), free.get(&gpu_counter(t))))
            .collect(),
        total_gpus,
        free_cpu: free.get(CPU),
        free_memory: free.get(MEMORY),
    }
}

/// Sets an offer's free counters to what its worker has, as a refused
/// reservation reported them; None when the worker's capacity record is
/// gone, so nothing goes there until the next reading.
pub(crate) fn correct(offer: &mut Offer, free: Option<FreeCapacity>) {
    let free = free.unwrap_or_default();
    offer.free_cpu = free.get(CPU);
    offer.free_memory = free.get(MEMORY);
    for (gpu_type, n) in &mut offer.free_gpus {
        *n = free.get(&gpu_counter(gpu_type));
    }
}

/// Reads the picture every [`REFRESH`] until `stopped`, publishing each.
pub(crate) async fn run(
    scheduling: Scheduling,
    tx: watch::Sender<Arc<Vec<Offer>>>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut records: HashMap<String, WorkerRecord> = HashMap::new();
    let mut schedulable: Vec<String> = Vec::new();
    loop {
        match read(&scheduling, &mut records).await {
            Ok(offers) => {
                let mut ids: Vec<String> = offers.iter().map(|o| o.worker_id.clone()).collect();
                ids.sort_unstable();
                // Once per change, so an operator (and a test) can tell
                // when a cordon or a new worker reached this replica.
                if ids != schedulable {
                    tracing::info!(workers = ?ids, "the workers this replica schedules on changed");
                    schedulable = ids;
                }
                tx.send_replace(Arc::new(offers));
            }
            Err(error) => tracing::warn!(%error, "cannot read the fleet for scheduling"),
        }
        tokio::select! {
            _ = stopped.wait_for(|s| *s) => return,
            _ = tokio::time::sleep(REFRESH) => {}
        }
    }
}

/// One reading: every live worker that is not cordoned. Worker records
/// are kept between readings (they change when a worker registers again,
/// which a changed heartbeat time shows only on its record, so records are
/// re-read when their worker was absent from the last reading).
pub async fn read(
    scheduling: &Scheduling,
    records: &mut HashMap<String, WorkerRecord>,
) -> Result<Vec<Offer>, ApiError> {
    let cordoned = scheduling.state.set_members(CORDONED).await?;
    let fleet = &scheduling.fleet;
    let mut offers = Vec::new();
    let mut seen = HashMap::new();
    for id in fleet.worker_ids().await? {
        if cordoned.binary_search(&id).is_ok() || !fleet.is_alive(&id).await? {
            continue;
        }
        let Some(free) = fleet.free_capacity(&id).await? else {
            continue;
        };
        let record = match records.remove(&id) {
            Some(record) => record,
            None => match fleet.worker(&id).await? {
                Some(record) => record,
                None => continue,
            },
        };
        offers.push(offer(&record, &free));
        seen.insert(id, record);
    }
    *records = seen;
    Ok(offers)
}
