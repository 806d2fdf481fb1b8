//! The warm pool floor: while a stub is part of the current version of a
//! deployed app, at least its `min_containers` containers run, even with
//! nothing to do. The floor is read from the store every [`REFRESH`] (a
//! deploy, a redeploy with another floor or another stub, a restart of the
//! controlplane are all seen that way), and topped up every tick: a
//! container that ends or whose worker is lost or drains is replaced.
//! Containers above the floor still scale down after `keep_warm_seconds`
//! ([`Dispatcher::stop_idle`]); a lower floor lets the extra ones go the same
//! way. A stub only called with `.remote()`, never deployed, has no floor.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{Dispatcher, Stub, MAX_STARTING};
use crate::functions::FunctionError;

/// How often the deployed stubs and their floors are read again.
const REFRESH: Duration = Duration::from_secs(2);
/// How long a floor waits before asking again after one of its containers
/// failed to start (a bad image, no room before the placement deadline), so a
/// floor that cannot be met does not flood the scheduler.
const RETRY_AFTER: Duration = Duration::from_secs(10);

/// A stub's floor.
#[derive(Default)]
pub(super) struct Floor {
    /// Containers to keep: the stub's `min_containers` while deployed, else 0.
    pub(super) want: usize,
    /// No new container for the floor before this (a start failed).
    pub(super) retry_at: Option<Instant>,
}

impl Stub {
    /// Containers that serve or will: warm ones taking inputs and requests.
    pub(super) fn serving_or_starting(&self) -> usize {
        let serving = self.warm.values().filter(|w| !w.draining && !w.lost);
        serving.count() + self.starting.len()
    }

    /// Warm containers beyond the floor: those keep-warm expiry may stop.
    pub(super) fn above_floor(&self) -> usize {
        let serving = self.warm.values().filter(|w| !w.draining && !w.lost);
        serving.count().saturating_sub(self.floor.want)
    }

    /// Requests beyond the floor: those that may be withdrawn.
    pub(super) fn requests_above_floor(&self) -> usize {
        self.serving_or_starting().saturating_sub(self.floor.want)
    }

    /// A container of the floor failed to start: wait before the next.
    pub(super) fn start_failed(&mut self) {
        if self.floor.want > 0 {
            self.floor.retry_at = Some(Instant::now() + RETRY_AFTER);
        }
    }
}

impl Dispatcher {
    /// Reads the floors again when due, then asks for the containers each
    /// floor lacks.
    pub(super) async fn keep_floors(&mut self) {
        if self
            .floors_read
            .is_none_or(|read| read.elapsed() >= REFRESH)
        {
            match self.read_floors().await {
                Ok(()) => self.floors_read = Some(Instant::now()),
                Err(error) => tracing::warn!(%error, "cannot read the deployed functions' floors"),
            }
        }
        let short: Vec<(String, usize)> = self
            .stubs
            .iter()
            .filter(|(_, s)| s.floor.retry_at.is_none_or(|at| at <= Instant::now()))
            .map(|(id, s)| {
                let lacking = s.floor.want.saturating_sub(s.serving_or_starting());
                (
                    id.clone(),
                    lacking.min(MAX_STARTING.saturating_sub(s.starting.len())),
                )
            })
            .filter(|(_, lacking)| *lacking > 0)
            .collect();
        for (stub_id, lacking) in short {
            tracing::info!(%stub_id, lacking, "asking for containers to keep a function's floor");
            for _ in 0..lacking {
                if let Err(error) = self.request_container(&stub_id).await {
                    tracing::warn!(%error, %stub_id, "cannot ask for a container of a floor");
                    break;
                }
            }
        }
    }

    /// Sets every stub's floor from the current deploys: `min_containers`
    /// for a deployed stub, 0 for any other.
    async fn read_floors(&mut self) -> Result<(), FunctionError> {
        let deployed = self.parts.store.deployed_stubs().await?;
        let mut floors = HashMap::new();
        for (workspace_id, stub_id) in deployed {
            match self.load_stub(&workspace_id, &stub_id).await {
                Ok(true) => {
                    let want = self.stubs[&stub_id].spec.min_containers as usize;
                    floors.insert(stub_id, want);
                }
                Ok(false) => {}
                // One unreadable stub does not take the others' floors.
                Err(error) => tracing::warn!(%error, %stub_id, "cannot read a deployed stub"),
            }
        }
        for (stub_id, stub) in &mut self.stubs {
            let want = floors.get(stub_id).copied().unwrap_or(0);
            if want != stub.floor.want {
                tracing::info!(%stub_id, from = stub.floor.want, to = want, "a function's floor changed");
                stub.floor = Floor {
                    want,
                    retry_at: None,
                };
            }
        }
        Ok(())
    }
}
