//! What containers print and how they end, for their followers: each
//! container's log and channel `container:<id>` (its entries, then
//! [`END_MARKER`]), and each exec's channel `exec:<id>`. Followers
//! subscribe before they read what is stored, so nothing falls between the
//! two.

use futures::stream::BoxStream;
use futures::StreamExt;
use levers9_api::v1::{container_log_event, ContainerLogEvent};
use levers9_state::keys;
use tokio::sync::mpsc;
use tonic::Status;

use super::attach::decode_log;
use super::{Fleet, FleetError, FleetNotice, END_MARKER, MAX_LOG_ENTRIES, RECORD_TTL};

impl Fleet {
    /// Appends a log entry and tells followers.
    pub async fn append_log(&self, container_id: &str, entry: &[u8]) -> Result<(), FleetError> {
        let key = keys::container(container_id);
        self.state
            .log_append(&key, entry, MAX_LOG_ENTRIES, RECORD_TTL)
            .await?;
        self.state.publish(&key, entry).await?;
        Ok(())
    }

    /// Tells followers a container reached a final state.
    pub async fn publish_end(&self, container_id: &str) -> Result<(), FleetError> {
        let key = keys::container(container_id);
        self.state.publish(&key, END_MARKER).await?;
        // The dispatcher ignores containers that serve no stub.
        Ok(self
            .notices
            .tell(FleetNotice::ContainerEnded {
                container_id: container_id.to_owned(),
            })
            .await?)
    }

    /// A container's log entries from now on, then [`END_MARKER`] when it
    /// ends.
    pub async fn follow_container(
        &self,
        container_id: &str,
    ) -> Result<BoxStream<'static, Vec<u8>>, FleetError> {
        Ok(self.state.subscribe(&keys::container(container_id)).await?)
    }

    /// A container's stored log entries, oldest first.
    pub async fn container_log(&self, container_id: &str) -> Result<Vec<Vec<u8>>, FleetError> {
        Ok(self.state.log_range(&keys::container(container_id)).await?)
    }

    /// What the worker says of an exec from now on (`ExecOutput`, encoded).
    pub async fn follow_exec(
        &self,
        exec_id: &str,
    ) -> Result<BoxStream<'static, Vec<u8>>, FleetError> {
        Ok(self.state.subscribe(&keys::exec_output(exec_id)).await?)
    }
}

/// Sends what is stored, then (following) what comes live until the end,
/// then a final catch-up so nothing appended just before the end is missed,
/// then the container as it ended. Sequence numbers drop repeats.
pub(crate) async fn follow_logs(
    fleet: Fleet,
    container_id: String,
    live: Option<futures::stream::BoxStream<'static, Vec<u8>>>,
    tx: mpsc::Sender<Result<ContainerLogEvent, Status>>,
) {
    let mut last_seq = 0;
    if !send_stored(&fleet, &container_id, &mut last_seq, &tx).await {
        return;
    }
    let ended_already =
        matches!(fleet.container(&container_id).await, Ok(Some(c)) if c.state.is_final());
    if let (Some(mut live), false) = (live, ended_already) {
        while let Some(message) = live.next().await {
            if message == END_MARKER {
                break;
            }
            if !send_new(&message, &mut last_seq, &tx).await {
                return;
            }
        }
    }
    if !send_stored(&fleet, &container_id, &mut last_seq, &tx).await {
        return;
    }
    if let Ok(Some(container)) = fleet.container(&container_id).await {
        if container.state.is_final() {
            let _ = tx
                .send(Ok(ContainerLogEvent {
                    kind: Some(container_log_event::Kind::Exited(container.to_api())),
                }))
                .await;
        }
    }
}

/// Sends the stored entries not sent yet; false when the reader is gone.
async fn send_stored(
    fleet: &Fleet,
    container_id: &str,
    last_seq: &mut u64,
    tx: &mpsc::Sender<Result<ContainerLogEvent, Status>>,
) -> bool {
    match fleet.container_log(container_id).await {
        Ok(entries) => {
            for entry in entries {
                if !send_new(&entry, last_seq, tx).await {
                    return false;
                }
            }
            true
        }
        Err(error) => {
            let _ = tx.send(Err(error.into())).await;
            false
        }
    }
}

/// Sends one stored or live entry if it is newer than what was sent.
async fn send_new(
    entry: &[u8],
    last_seq: &mut u64,
    tx: &mpsc::Sender<Result<ContainerLogEvent, Status>>,
) -> bool {
    let Some(chunk) = decode_log(entry) else {
        return true;
    };
    if chunk.seq <= *last_seq {
        return true;
    }
    *last_seq = chunk.seq;
    tx.send(Ok(ContainerLogEvent {
        kind: Some(container_log_event::Kind::Log(chunk)),
    }))
    .await
    .is_ok()
}
