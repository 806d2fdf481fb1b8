//! QueueService: named FIFO queues of the caller's workspace, in the hot
//! state (the registry and limits are in `objects.rs`).

use std::sync::Arc;
use std::time::Duration;

use levers9_api::v1::{
    queue_service_server::QueueService, DeleteQueueRequest, DeleteQueueResponse, GetQueueRequest,
    GetQueueResponse, ListQueuesRequest, ListQueuesResponse, QueueClearRequest, QueueClearResponse,
    QueueGetRequest, QueueGetResponse, QueueLenRequest, QueueLenResponse, QueuePutRequest,
    QueuePutResponse,
};
use tonic::{Request, Response, Status};

use super::objects::{workspace_of, Kind, Objects};
use crate::error::ApiError;
use crate::Shared;

/// The longest one QueueGet waits: a caller that waits longer calls again,
/// so no request outlives proxies' idle timeouts or a replica's drain.
const MAX_WAIT: Duration = Duration::from_secs(60);
/// Items one QueueGet takes at most.
const MAX_ITEMS: u32 = 10_000;

/// Names of the queues the platform keeps for itself: a websocket
/// connection's inbox of client messages (`endpoints/websocket`). No
/// caller's queue name may start so, so a caller can neither create, list
/// nor delete one; QueueGet takes from one by its unguessable name, as the
/// connection's runner does, and nothing else of this service reaches it.
pub(crate) const INBOX_PREFIX: &str = "~inbox.";

/// Whether `name` is an inbox's: the prefix and 1 to 64 letters or digits.
fn is_inbox(name: &str) -> bool {
    name.strip_prefix(INBOX_PREFIX).is_some_and(|id| {
        !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

/// The QueueService implementation.
pub struct QueueApi {
    shared: Arc<Shared>,
}

impl QueueApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// The workspace the call acts in (see [`workspace_of`]).
    async fn workspace<T>(&self, request: &tonic::Request<T>) -> Result<String, ApiError> {
        workspace_of(&self.shared, request, Kind::Queue).await
    }

    fn queues<'a>(&'a self, workspace_id: &'a str) -> Objects<'a> {
        Objects {
            state: self.shared.state.as_ref(),
            limits: &self.shared.object_limits,
            workspace_id,
            kind: Kind::Queue,
        }
    }
}

/// Appends items to an existing queue, all or none; its length after.
async fn put(queues: &Objects<'_>, name: &str, items: &[Vec<u8>]) -> Result<u64, ApiError> {
    for item in items {
        queues.check_size("item", item.len())?;
    }
    queues.require(name).await?;
    let limit = queues.limits.max_queue_items;
    let contents = queues.contents(name);
    if let Some(len) = queues.state.push_capped(&contents, items, limit).await? {
        return Ok(len);
    }
    let len = queues.state.queue_len(&contents).await?;
    Err(ApiError::ResourceExhausted(format!(
        "the queue {name:?} holds {len} items and {} more would pass its limit of {limit} \
         (controlplane.objects.maxQueueItems): take items out or clear it first",
        items.len()
    )))
}

/// Up to `max_items` from the head, waiting up to `wait` for the first.
async fn get(
    queues: &Objects<'_>,
    name: &str,
    max_items: u32,
    wait: Duration,
) -> Result<Vec<Vec<u8>>, ApiError> {
    if max_items == 0 || max_items > MAX_ITEMS {
        return Err(ApiError::InvalidArgument(format!(
            "max_items is {max_items}: take 1 to {MAX_ITEMS} items at a time"
        )));
    }
    if !is_inbox(name) {
        queues.require(name).await?;
    }
    let contents = queues.contents(name);
    let max = max_items as usize;
    if wait.is_zero() {
        return Ok(queues.state.pop_many(&contents, max).await?);
    }
    let Some(first) = queues.state.pop(&contents, wait.min(MAX_WAIT)).await? else {
        return Ok(Vec::new());
    };
    let mut items = vec![first];
    if max > 1 {
        items.extend(queues.state.pop_many(&contents, max - 1).await?);
    }
    Ok(items)
}

#[tonic::async_trait]
impl QueueService for QueueApi {
    async fn get_queue(
        &self,
        request: Request<GetQueueRequest>,
    ) -> Result<Response<GetQueueResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let body = request.into_inner();
        let (queue, created) = self
            .queues(&workspace_id)
            .look_up(&body.name, body.create_if_missing)
            .await?;
        Ok(Response::new(GetQueueResponse {
            queue: Some(queue),
            created,
        }))
    }

    async fn list_queues(
        &self,
        request: Request<ListQueuesRequest>,
    ) -> Result<Response<ListQueuesResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let queues = self.queues(&workspace_id).list().await?;
        Ok(Response::new(ListQueuesResponse { queues }))
    }

    async fn delete_queue(
        &self,
        request: Request<DeleteQueueRequest>,
    ) -> Result<Response<DeleteQueueResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        self.queues(&workspace_id)
            .delete(&request.into_inner().name)
            .await?;
        Ok(Response::new(DeleteQueueResponse {}))
    }

    async fn queue_put(
        &self,
        request: Request<QueuePutRequest>,
    ) -> Result<Response<QueuePutResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let body = request.into_inner();
        let len = put(&self.queues(&workspace_id), &body.name, &body.items).await?;
        Ok(Response::new(QueuePutResponse { len }))
    }

    async fn queue_get(
        &self,
        request: Request<QueueGetRequest>,
    ) -> Result<Response<QueueGetResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let body = request.into_inner();
        let wait = Duration::from_millis(body.wait_ms);
        let items = get(
            &self.queues(&workspace_id),
            &body.name,
            body.max_items,
            wait,
        )
        .await?;
        Ok(Response::new(QueueGetResponse { items }))
    }

    async fn queue_len(
        &self,
        request: Request<QueueLenRequest>,
    ) -> Result<Response<QueueLenResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let name = request.into_inner().name;
        let queues = self.queues(&workspace_id);
        queues.require(&name).await?;
        let len = queues.len(&name).await?;
        Ok(Response::new(QueueLenResponse { len }))
    }

    async fn queue_clear(
        &self,
        request: Request<QueueClearRequest>,
    ) -> Result<Response<QueueClearResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let name = request.into_inner().name;
        let queues = self.queues(&workspace_id);
        queues.require(&name).await?;
        let cleared = queues.clear(&name).await?;
        Ok(Response::new(QueueClearResponse { cleared }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_gateways_inbox_names_skip_the_registry() {
        assert!(is_inbox("~inbox.0b7c2f3e9a1d4c5e8f6a7b8c9d0e1f2a"));
        for not in [
            "~inbox.",
            "~inbox.a-b",
            "inbox.abc",
            "~other.abc",
            &format!("~inbox.{}", "a".repeat(65)),
        ] {
            assert!(!is_inbox(not), "{not}");
        }
    }
}
