//! The levers9 gRPC API, generated from `proto/levers9/v1` (one file per
//! service).
#![forbid(unsafe_code)]

/// Version 1 of the API: messages, clients and servers. Generated: exempt
/// from the workspace's lints (its docs are the protos' comments).
#[allow(
    missing_docs,
    clippy::all,
    clippy::pedantic,
    clippy::restriction,
    rustdoc::all
)]
pub mod v1 {
    tonic::include_proto!("levers9.v1");
}

mod bearer;
pub mod dial;
mod http_status;
mod redact;
pub mod words;

pub use bearer::{Bearer, InvalidToken};
pub use http_status::http_status_of;
pub use words::Words;

/// gRPC metadata key that carries the bootstrap secret on the first Authorize.
pub const BOOTSTRAP_SECRET_METADATA: &str = "x-levers9-bootstrap-secret";

/// gRPC metadata key with which a worker (with its own token) calls
/// DictService or QueueService for one of its containers: the call acts in
/// that container's workspace, so no workspace token enters containers.
pub const CONTAINER_ID_METADATA: &str = "x-levers9-container-id";

/// An error with its causes on one line: transport errors say only
/// "transport error" themselves, and the cause is what helps.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
