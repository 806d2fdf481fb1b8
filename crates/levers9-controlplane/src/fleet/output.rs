//! What containers print and how they end, for their followers: each
//! container's log and channel `container:<id>` (its entries, then
//! [`END_MARKER`]), and each exec's channel `exec:<id>`. Followers
//! subscribe before they read what is stored, so nothing falls between the
//! two.

use futures::stream::BoxStream;
use levers9_state::keys;

use super::{Fleet, END_MARKER, MAX_LOG_ENTRIES, RECORD_TTL};
use crate::error::ApiError;
use crate::functions::DispatchEvent;

impl Fleet {
    /// Appends a log entry and tells followers.
    pub async fn append_log(&self, container_id: &str, entry: &[u8]) -> Result<(), ApiError> {
        let key = keys::container(container_id);
        self.state
            .log_append(&key, entry, MAX_LOG_ENTRIES, RECORD_TTL)
            .await?;
        self.state.publish(&key, entry).await?;
        Ok(())
    }

    /// Tells followers a container reached a final state.
    pub async fn publish_end(&self, container_id: &str) -> Result<(), ApiError> {
        let key = keys::container(container_id);
        self.state.publish(&key, END_MARKER).await?;
        // The dispatcher ignores containers that serve no stub.
        self.tasks
            .tell(&DispatchEvent::ContainerEnded {
                container_id: container_id.to_owned(),
            })
            .await
    }

    /// A container's log entries from now on, then [`END_MARKER`] when it
    /// ends.
    pub async fn follow_container(
        &self,
        container_id: &str,
    ) -> Result<BoxStream<'static, Vec<u8>>, ApiError> {
        Ok(self.state.subscribe(&keys::container(container_id)).await?)
    }

    /// A container's stored log entries, oldest first.
    pub async fn container_log(&self, container_id: &str) -> Result<Vec<Vec<u8>>, ApiError> {
        Ok(self.state.log_range(&keys::container(container_id)).await?)
    }

    /// What the worker says of an exec from now on (`ExecOutput`, encoded).
    pub async fn follow_exec(
        &self,
        exec_id: &str,
    ) -> Result<BoxStream<'static, Vec<u8>>, ApiError> {
        Ok(self.state.subscribe(&keys::exec_output(exec_id)).await?)
    }
}
