//! Dict and Queue calls of code in the container (`levers9.Dict`,
//! `levers9.Queue`), forwarded to the controlplane.
//!
//! The runner sends an `object_call` frame (the method, its scalar fields in
//! the header, its byte strings in the body) and gets an `object_reply` with
//! the same `call_id`. The worker makes the gRPC call with its own token and
//! names the container (`x-levers9-container-id`); the controlplane acts in
//! that container's workspace. No workspace token ever enters a container,
//! and a container can reach only its own workspace's dicts and queues.
//!
//! A body is a list of byte strings, each `u32 BE length ‖ bytes`: a dict's
//! key and value alternate, a queue's items follow one another.

use std::sync::Arc;
use std::time::Duration;

use levers9_api::v1::{
    dict_service_client::DictServiceClient, queue_service_client::QueueServiceClient,
    DeleteDictRequest, DeleteQueueRequest, DictClearRequest, DictEntriesRequest, DictEntry,
    DictGetRequest, DictLenRequest, DictPopRequest, DictPutRequest, GetDictRequest,
    GetQueueRequest, QueueClearRequest, QueueGetRequest, QueueLenRequest, QueuePutRequest,
};
use levers9_api::CONTAINER_ID_METADATA;
use levers9_ids::ContainerId;
use serde::Deserialize;
use serde_json::{json, Value};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::Channel;
use tonic::{Code, Status};

use super::{wire, Connection, Shared};
use crate::GrpcSourceError;

/// Deadline of a call; a blocking get gets its wait on top.
const CALL_DEADLINE: Duration = Duration::from_secs(30);
/// Deadline of connecting to the controlplane.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Messages as large as the controlplane accepts for these services.
const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// One call as the runner sends it; fields a method does not use are left out.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct ObjectCall {
    /// Echoed in the reply, so the runner's threads can wait in parallel.
    call_id: u64,
    /// The DictService or QueueService method, e.g. `DictPut`.
    method: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    create_if_missing: bool,
    #[serde(default)]
    skip_existing: bool,
    #[serde(default)]
    keys_only: bool,
    #[serde(default)]
    max_items: u32,
    #[serde(default)]
    wait_ms: u64,
}

/// Makes the calls for the containers of one worker.
pub struct NamedForwarder {
    channel: Channel,
    bearer: MetadataValue<Ascii>,
}

// By hand: the bearer holds the worker's token, which no log may print.
impl std::fmt::Debug for NamedForwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamedForwarder").finish_non_exhaustive()
    }
}

impl NamedForwarder {
    /// A forwarder reaching `controlplane` with the worker's token. Connects
    /// on first use, so it must be created inside a Tokio runtime.
    pub fn new(
        controlplane: &levers9_api::dial::Controlplane,
        token: &str,
    ) -> Result<Self, GrpcSourceError> {
        let channel = controlplane
            .endpoint()?
            .connect_timeout(CONNECT_TIMEOUT)
            .connect_lazy();
        let bearer = format!("Bearer {token}")
            .parse()
            .map_err(|_| GrpcSourceError::Token)?;
        Ok(Self { channel, bearer })
    }

    fn request<T>(
        &self,
        container_id: &ContainerId,
        message: T,
        deadline: Duration,
    ) -> Result<tonic::Request<T>, Status> {
        let mut request = tonic::Request::new(message);
        let container = container_id
            .as_str()
            .parse()
            .map_err(|_| Status::internal("a container id that cannot be sent"))?;
        let metadata = request.metadata_mut();
        metadata.insert("authorization", self.bearer.clone());
        metadata.insert(CONTAINER_ID_METADATA, container);
        request.set_timeout(deadline);
        Ok(request)
    }

    /// The reply's header fields and byte strings.
    async fn forward(
        &self,
        container_id: &ContainerId,
        call: ObjectCall,
        parts: Vec<Vec<u8>>,
    ) -> Result<(Value, Vec<Vec<u8>>), Status> {
        let wait = Duration::from_millis(call.wait_ms);
        let deadline = CALL_DEADLINE + wait;
        // A macro, not a closure: each method takes its own message type.
        macro_rules! r {
            ($message:expr) => {
                self.request(container_id, $message, deadline)?
            };
        }
        let mut dicts = DictServiceClient::new(self.channel.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        let mut queues = QueueServiceClient::new(self.channel.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        let name = call.name;
        let key = || parts.first().cloned().unwrap_or_default();
        let answer = match call.method.as_str() {
            "GetDict" => {
                let message = GetDictRequest {
                    name,
                    create_if_missing: call.create_if_missing,
                };
                let reply = dicts.get_dict(r!(message)).await?.into_inner();
                (json!({ "created": reply.created }), Vec::new())
            }
            "DeleteDict" => {
                dicts.delete_dict(r!(DeleteDictRequest { name })).await?;
                (json!({}), Vec::new())
            }
            "DictPut" => {
                if !parts.len().is_multiple_of(2) {
                    return Err(Status::invalid_argument(
                        "DictPut needs a value after each key",
                    ));
                }
                let mut parts = parts.into_iter();
                let mut entries = Vec::new();
                while let (Some(key), Some(value)) = (parts.next(), parts.next()) {
                    entries.push(DictEntry { key, value });
                }
                let message = DictPutRequest {
                    name,
                    entries,
                    skip_existing: call.skip_existing,
                };
                let reply = dicts.dict_put(r!(message)).await?.into_inner();
                (json!({ "added": reply.added }), Vec::new())
            }
            "DictGet" => {
                let message = DictGetRequest { name, key: key() };
                let reply = dicts.dict_get(r!(message)).await?.into_inner();
                (json!({ "found": reply.found }), vec![reply.value])
            }
            "DictPop" => {
                let message = DictPopRequest { name, key: key() };
                let reply = dicts.dict_pop(r!(message)).await?.into_inner();
                (json!({ "found": reply.found }), vec![reply.value])
            }
            "DictLen" => {
                let reply = dicts.dict_len(r!(DictLenRequest { name })).await?;
                (json!({ "len": reply.into_inner().len }), Vec::new())
            }
            "DictEntries" => {
                let message = DictEntriesRequest {
                    name,
                    keys_only: call.keys_only,
                };
                let reply = dicts.dict_entries(r!(message)).await?.into_inner();
                let parts = reply
                    .entries
                    .into_iter()
                    .flat_map(|e| [e.key, e.value])
                    .collect();
                (json!({}), parts)
            }
            "DictClear" => {
                dicts.dict_clear(r!(DictClearRequest { name })).await?;
                (json!({}), Vec::new())
            }
            "GetQueue" => {
                let message = GetQueueRequest {
                    name,
                    create_if_missing: call.create_if_missing,
                };
                let reply = queues.get_queue(r!(message)).await?.into_inner();
                (json!({ "created": reply.created }), Vec::new())
            }
            "DeleteQueue" => {
                queues.delete_queue(r!(DeleteQueueRequest { name })).await?;
                (json!({}), Vec::new())
            }
            "QueuePut" => {
                let message = QueuePutRequest { name, items: parts };
                let reply = queues.queue_put(r!(message)).await?.into_inner();
                (json!({ "len": reply.len }), Vec::new())
            }
            "QueueGet" => {
                let message = QueueGetRequest {
                    name,
                    max_items: call.max_items,
                    wait_ms: call.wait_ms,
                };
                let reply = queues.queue_get(r!(message)).await?.into_inner();
                (json!({}), reply.items)
            }
            "QueueLen" => {
                let reply = queues.queue_len(r!(QueueLenRequest { name })).await?;
                (json!({ "len": reply.into_inner().len }), Vec::new())
            }
            "QueueClear" => {
                let reply = queues.queue_clear(r!(QueueClearRequest { name })).await?;
                (json!({ "cleared": reply.into_inner().cleared }), Vec::new())
            }
            other => {
                return Err(Status::unimplemented(format!(
                    "{other:?} cannot be called from a container: use DictService or \
                     QueueService methods"
                )))
            }
        };
        Ok(answer)
    }
}

impl Shared {
    /// Forwards a call of the runner's on a task of its own (a blocking
    /// get may wait a minute, and frames behind it must not), and writes
    /// the reply when it comes.
    pub(super) fn object_call(self: &Arc<Self>, call: ObjectCall, body: Vec<u8>) {
        let call_id = call.call_id;
        let (writer, admitted) = match &self.state().connection {
            Connection::Open {
                writer, admitted, ..
            } => (writer.clone(), *admitted),
            _ => return,
        };
        let forwarder = self.named.get().cloned();
        let container_id = self.id();
        tokio::spawn(async move {
            let answer = match (admitted, forwarder) {
                // Only a runner that presented the container's credential,
                // in its attach (a class's, before @enter) or its hello.
                (false, _) => Err(Status::permission_denied(
                    "the function runner has not presented the container's credential \
                     (attach or hello)",
                )),
                (true, None) => Err(Status::unavailable(
                    "this worker does not forward Dict and Queue calls",
                )),
                (true, Some(forwarder)) => match unpack(&body) {
                    Some(parts) => forwarder.forward(&container_id, call, parts).await,
                    None => Err(Status::invalid_argument("a malformed object_call body")),
                },
            };
            let (mut header, parts) = match answer {
                Ok(answer) => answer,
                Err(status) => (
                    json!({ "code": code_name(status.code()), "message": status.message() }),
                    Vec::new(),
                ),
            };
            header["type"] = json!("object_reply");
            header["call_id"] = json!(call_id);
            // Fails only once the runner is gone, when no one waits.
            let _ = writer.send(wire::encode(&header, &pack(&parts)));
        });
    }
}

/// The byte strings of a body; None if it is cut short.
pub fn unpack(body: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut parts = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (len, tail) = rest.split_first_chunk::<4>()?;
        let len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
        if tail.len() < len {
            return None;
        }
        let (part, tail) = tail.split_at(len);
        parts.push(part.to_vec());
        rest = tail;
    }
    Some(parts)
}

/// A body of byte strings, as [`unpack`] reads it.
pub fn pack(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut body = Vec::with_capacity(parts.iter().map(|p| p.len() + 4).sum());
    for part in parts {
        // Parts come from gRPC messages decoded under a 256 MiB limit.
        let len = u32::try_from(part.len()).unwrap_or(u32::MAX);
        body.extend_from_slice(&len.to_be_bytes());
        body.extend_from_slice(part);
    }
    body
}

/// The code as gRPC names it (`NOT_FOUND`), as the SDK's errors carry it.
fn code_name(code: Code) -> String {
    let mut name = String::new();
    for (i, c) in format!("{code:?}").chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_round_trip_and_cut_ones_are_refused() {
        let parts = vec![b"key".to_vec(), Vec::new(), b"value".to_vec()];
        let body = pack(&parts);
        assert_eq!(unpack(&body), Some(parts));
        assert_eq!(unpack(&[]), Some(Vec::new()));
        assert_eq!(unpack(&body[..body.len() - 1]), None);
        assert_eq!(unpack(&[0, 0]), None);
    }

    #[test]
    fn codes_are_named_as_grpc_names_them() {
        assert_eq!(code_name(Code::NotFound), "NOT_FOUND");
        assert_eq!(code_name(Code::ResourceExhausted), "RESOURCE_EXHAUSTED");
        assert_eq!(code_name(Code::Ok), "OK");
    }
}
