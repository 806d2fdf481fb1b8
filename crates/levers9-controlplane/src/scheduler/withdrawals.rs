//! Container requests withdrawn before a worker took them: whoever asked
//! for a container no longer needs it (the function dispatcher, once its
//! queue is empty). The withdrawal is a mark the scheduler reads with each
//! batch and acts on; the withdrawer never writes the record itself.
//!
//! Why a mark: a `failed` written by the withdrawer could land after a
//! scheduler placed the request, and then the record would say "never ran"
//! while the worker runs it and holds its reservation, which nothing would
//! give back. The scheduler that claimed a request is the only writer of
//! its record until it is placed. A request placed between the
//! withdrawer's look and its mark simply runs; its owner stops it.

use std::time::Duration;

use levers9_state::{keys, StateError, Write};

use super::{Scheduling, PLACEMENT_DEADLINE};
use crate::error::ApiError;

impl Scheduling {
    /// Marks requests withdrawn, for `reason` (which their records will
    /// carry). A mark outlives any wait for room, then goes by itself.
    pub async fn withdraw(&self, ids: &[String], reason: &str) -> Result<(), StateError> {
        let writes: Vec<Write> = ids
            .iter()
            .map(|id| Write::Set {
                key: keys::withdrawn(id),
                value: reason.as_bytes().to_vec(),
                ttl: PLACEMENT_DEADLINE + Duration::from_secs(60),
            })
            .collect();
        self.state.write_batch(&writes).await
    }

    /// Why each request was withdrawn, in order; None for one that was not.
    pub async fn withdrawals(&self, ids: &[String]) -> Result<Vec<Option<String>>, ApiError> {
        let keys: Vec<String> = ids.iter().map(|id| keys::withdrawn(id)).collect();
        Ok(self
            .state
            .get_many(&keys)
            .await?
            .into_iter()
            .map(|mark| mark.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
            .collect())
    }
}
