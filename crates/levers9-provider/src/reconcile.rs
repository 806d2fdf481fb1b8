//! The reconcile round, written once for every provider.

use crate::{Phase, WorkerProvider};

/// What one reconcile round saw and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round {
    /// Workers running, before the round's changes.
    pub running: usize,
    /// Workers not up yet.
    pub pending: usize,
    /// Workers added.
    pub created: usize,
    /// Finished workers (they exited) removed.
    pub deleted_finished: usize,
    /// Workers beyond the number wanted removed.
    pub deleted_extra: usize,
}

/// One round: removes finished workers, then adds or removes workers until
/// `wanted` are running or pending.
///
/// # Guarantees
/// - Extra workers are removed pending ones first (they run nothing yet),
///   newest first; a running worker is asked to drain.
/// - Terminating workers count for nothing and are left alone.
///
/// # Errors
/// The first request the provider refuses; the round stops there and the
/// next one starts over from a fresh list, so nothing is done twice.
pub async fn reconcile<P>(provider: &P, wanted: usize) -> Result<Round, P::Error>
where
    P: WorkerProvider + ?Sized,
{
    let mut round = Round::default();
    let mut running = Vec::new();
    let mut pending = Vec::new();
    for worker in provider.list().await? {
        match worker.phase {
            Phase::Terminating => {}
            Phase::Finished => {
                provider.remove_worker(&worker.name).await?;
                round.deleted_finished += 1;
            }
            Phase::Running => running.push((worker.started, worker.name)),
            Phase::Pending => pending.push((worker.started, worker.name)),
        }
    }
    round.running = running.len();
    round.pending = pending.len();
    let active = running.len() + pending.len();
    for _ in active..wanted {
        provider.add_worker().await?;
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
        provider.remove_worker(&name).await?;
        round.deleted_extra += 1;
        extra -= 1;
    }
    if round.created + round.deleted_extra + round.deleted_finished > 0 {
        tracing::info!(pool = %provider.pool(), wanted, ?round, "pool workers reconciled");
    }
    Ok(round)
}

#[cfg(test)]
mod tests;
