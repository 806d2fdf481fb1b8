//! LogService: what tasks printed, from the record store (written by
//! `functions::logs`), with followers woken by the hot state's channel so
//! that they see lines stored by any replica.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use levers9_api::v1::{
    log_service_server::LogService, FollowLogsResponse, ListLogsRequest, ListLogsResponse, LogLine,
};
use levers9_state::keys;
use levers9_store::{LogQuery, LogRecord};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::auth::{authorized, Caller, USERS};
use crate::error::ApiError;
use crate::Shared;

/// Lines per answer when the request names no limit.
const DEFAULT_LIMIT: u32 = 1000;
/// The most lines one answer carries.
const MAX_LIMIT: u32 = 10_000;
/// How often a follower reads the store without being woken: a wake-up
/// lost with a Redis reconnect costs at most this, and a followed task's
/// end is noticed within it.
const FOLLOW_POLL: Duration = Duration::from_secs(1);

type FollowStream = Pin<Box<dyn Stream<Item = Result<FollowLogsResponse, Status>> + Send>>;

/// The LogService implementation.
pub struct LogApi {
    shared: Arc<Shared>,
}

/// A request resolved in the caller's workspace.
struct Selection {
    query: LogQuery,
    /// The one task followed, whose end ends the follow.
    task_id: Option<String>,
}

impl LogApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// Checks the request and names its task or stubs, all of the caller's
    /// workspace: another workspace's task looks like a missing one.
    async fn select(&self, caller: &Caller, body: ListLogsRequest) -> Result<Selection, ApiError> {
        let workspace_id = caller.workspace.id.clone();
        let named = [&body.task_id, &body.stub_id, &body.app_name]
            .iter()
            .filter(|s| !s.is_empty())
            .count();
        if named != 1 {
            return Err(ApiError::InvalidArgument(
                "name exactly one of task_id, stub_id or app_name (with function_name for one \
                 function of the app)"
                    .into(),
            ));
        }
        if !body.function_name.is_empty() && body.app_name.is_empty() {
            return Err(ApiError::InvalidArgument(
                "function_name needs app_name: the app the function is deployed in".into(),
            ));
        }
        let since = match body.since.as_str() {
            "" => None,
            text => Some(
                chrono::DateTime::parse_from_rfc3339(text)
                    .map_err(|e| {
                        ApiError::InvalidArgument(format!(
                            "since {text:?} is not an RFC 3339 time (like 2025-03-14T15:09:26Z): {e}"
                        ))
                    })?
                    .with_timezone(&chrono::Utc),
            ),
        };
        let limit = match body.limit {
            0 => DEFAULT_LIMIT,
            n if n > MAX_LIMIT => {
                return Err(ApiError::InvalidArgument(format!(
                    "limit {n} is over {MAX_LIMIT}: read further with after_id"
                )))
            }
            n => n,
        };
        let functions = &self.shared.functions;
        let (task_id, stub_ids) = if !body.task_id.is_empty() {
            if functions
                .get_task(&workspace_id, &body.task_id)
                .await?
                .is_none()
            {
                return Err(ApiError::NotFound(format!(
                    "no task {:?} in this workspace: see levers9 task list",
                    body.task_id
                )));
            }
            (Some(body.task_id), Vec::new())
        } else if !body.stub_id.is_empty() {
            if functions
                .get_stub(&workspace_id, &body.stub_id)
                .await?
                .is_none()
            {
                return Err(ApiError::NotFound(format!(
                    "no stub {:?} in this workspace: see levers9 stub list",
                    body.stub_id
                )));
            }
            (None, vec![body.stub_id])
        } else {
            let stubs: Vec<String> = functions
                .list_deployments(&workspace_id)
                .await?
                .into_iter()
                .filter(|d| d.app_name == body.app_name)
                .filter(|d| body.function_name.is_empty() || d.function_name == body.function_name)
                .map(|d| d.stub_id)
                .collect();
            if stubs.is_empty() {
                let what = match body.function_name.as_str() {
                    "" => format!("app {:?}", body.app_name),
                    function => format!("function {function:?} of app {:?}", body.app_name),
                };
                return Err(ApiError::NotFound(format!(
                    "no deployed {what} in this workspace: see levers9 deployment list"
                )));
            }
            (None, stubs)
        };
        Ok(Selection {
            query: LogQuery {
                workspace_id,
                task_id: task_id.clone(),
                stub_ids,
                after_id: body.after_id,
                since,
                limit,
                tail: body.tail,
            },
            task_id,
        })
    }
}

fn line(record: LogRecord) -> LogLine {
    LogLine {
        id: record.id,
        task_id: record.task_id,
        stub_id: record.stub_id,
        stream: record.stream,
        data: record.data,
        received_at: record
            .at
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
    }
}

#[tonic::async_trait]
impl LogService for LogApi {
    async fn list_logs(
        &self,
        request: Request<ListLogsRequest>,
    ) -> Result<Response<ListLogsResponse>, Status> {
        let caller = authorized(&request, USERS, "read task output")?;
        let selection = self.select(&caller, request.into_inner()).await?;
        let records = self
            .shared
            .logs
            .list_logs(&selection.query)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(ListLogsResponse {
            lines: records.into_iter().map(line).collect(),
        }))
    }

    type FollowLogsStream = FollowStream;

    async fn follow_logs(
        &self,
        request: Request<ListLogsRequest>,
    ) -> Result<Response<Self::FollowLogsStream>, Status> {
        let caller = authorized(&request, USERS, "read task output")?;
        let selection = self.select(&caller, request.into_inner()).await?;
        // Subscribed before the first read, so no line falls between the two.
        let wakes = self
            .shared
            .state
            .subscribe(&keys::task_logs(&caller.workspace.id))
            .await
            .map_err(ApiError::from)?;
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(follow(self.shared.clone(), selection, wakes, tx));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

/// Sends the stored lines, then new ones each time the workspace's channel
/// (or the poll) says there may be some, until the reader goes or the one
/// followed task has ended and its last lines are sent.
async fn follow(
    shared: Arc<Shared>,
    selection: Selection,
    mut wakes: futures::stream::BoxStream<'static, Vec<u8>>,
    tx: mpsc::Sender<Result<FollowLogsResponse, Status>>,
) {
    let mut query = selection.query;
    let mut poll = tokio::time::interval(FOLLOW_POLL);
    let mut wakes_open = true;
    let mut ending = false;
    loop {
        // Read until a short answer: everything stored so far is sent.
        loop {
            let lines = match shared.logs.list_logs(&query).await {
                Ok(records) => records,
                Err(error) => {
                    let _ = tx.send(Err(ApiError::from(error).into())).await;
                    return;
                }
            };
            let full = lines.len() >= query.limit as usize;
            if let Some(last) = lines.last() {
                query.after_id = last.id;
            }
            // Past the history, read forward: the tail was only its start.
            query.tail = false;
            if !lines.is_empty() {
                let lines = lines.into_iter().map(line).collect();
                if tx.send(Ok(FollowLogsResponse { lines })).await.is_err() {
                    return;
                }
            }
            if !full {
                break;
            }
        }
        if ending {
            return;
        }
        if let Some(task_id) = &selection.task_id {
            // The task's last lines may still be in a writer's batch when it
            // ends: one more read, a poll later, picks them up.
            ending = matches!(
                shared.functions.get_task(&query.workspace_id, task_id).await,
                Ok(Some(task)) if task.state.is_final()
            );
        }
        tokio::select! {
            _ = tx.closed() => return,
            wake = wakes.next(), if wakes_open => wakes_open = wake.is_some(),
            _ = poll.tick() => {}
        }
    }
}
