//! What a scheduler replica holds of the backlog. A replica claims each
//! batch it takes (moved from the backlog into its claims list in one
//! step) and settles it once every request of the batch is placed, failed
//! or put back. A replica that dies holding a batch stops refreshing its
//! alive key; the reaper then puts its still-pending requests back in the
//! backlog ([`recover`]), so a killed replica loses no request.

use std::time::Duration;

use levers9_state::keys;

use super::{Scheduling, BACKLOG};
use crate::error::ApiError;
use crate::fleet::records::ContainerState;

/// The set of replicas that have run a scheduler.
const SCHEDULERS: &str = "schedulers";
/// How long a replica counts as alive after its last refresh: far beyond a
/// batch's few seconds, so a slow batch is never taken from a live
/// replica.
pub const ALIVE_TTL: Duration = Duration::from_secs(30);

/// Says replica `replica` is alive for another [`ALIVE_TTL`]; the first
/// call also lists it for [`recover`].
pub async fn refresh(scheduling: &Scheduling, replica: &str, first: bool) -> Result<(), ApiError> {
    if first {
        scheduling.state.set_add(SCHEDULERS, replica).await?;
    }
    scheduling
        .state
        .set_with_ttl(&keys::scheduler_alive(replica), b"", ALIVE_TTL)
        .await?;
    Ok(())
}

/// Says replica `replica` stopped: what it still holds is put back by the
/// next [`recover`], without waiting for [`ALIVE_TTL`].
pub async fn forget(scheduling: &Scheduling, replica: &str) -> Result<(), ApiError> {
    scheduling
        .state
        .delete(&keys::scheduler_alive(replica))
        .await?;
    Ok(())
}

/// Puts the pending requests that replicas no longer alive held back in
/// the backlog; what they held and had settled in part (placed, failed) is
/// only dropped. Returns how many requests went back.
pub async fn recover(scheduling: &Scheduling) -> Result<usize, ApiError> {
    let mut requeued = 0;
    let state = &scheduling.state;
    for replica in state.set_members(SCHEDULERS).await? {
        if state.get(&keys::scheduler_alive(&replica)).await?.is_some() {
            continue;
        }
        let claims = keys::backlog_claims(&replica);
        let held = state.claimed(&claims).await?;
        if held.is_empty() {
            state.set_remove(SCHEDULERS, &replica).await?;
            continue;
        }
        let ids: Vec<String> = held
            .iter()
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            .collect();
        let records = scheduling.fleet.containers(&ids).await?;
        let (mut pending, mut settled) = (Vec::new(), Vec::new());
        for (bytes, record) in held.into_iter().zip(records) {
            match record? {
                Some(c) if c.state == ContainerState::Pending => pending.push(bytes),
                _ => settled.push(bytes),
            }
        }
        state.unclaim(&claims, &settled, None).await?;
        state.unclaim(&claims, &pending, Some(BACKLOG)).await?;
        if !pending.is_empty() {
            tracing::warn!(
                replica,
                requests = pending.len(),
                "a stopped replica held container requests: back in the backlog"
            );
        }
        requeued += pending.len();
    }
    Ok(requeued)
}
