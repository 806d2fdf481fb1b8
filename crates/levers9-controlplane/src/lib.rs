//! The levers9 controlplane: gRPC services on one port, health, metrics and
//! the REST mapping on another, over a record store and a hot state.
#![forbid(unsafe_code)]

pub mod auth;
pub mod backends;
pub mod endpoints;
pub mod error;
pub mod fleet;
pub mod functions;
pub mod http;
pub mod images;
pub mod machines;
pub mod metrics;
pub mod registry;
pub mod rest;
pub mod scheduler;
pub mod schedules;
pub mod sealing;
pub mod server;
pub mod services;
pub mod tls;
mod wire_states;

use std::sync::Arc;

use levers9_config::Secret;
use levers9_seal::Keyring;
use levers9_state::HotState;
use levers9_store::{FunctionStore, LogStore, MachineStore, RecordStore, SealedStore};

pub use server::{start, RunningControlplane, StartError};

/// A new record id: uuid v7, so ids sort by creation time.
pub(crate) fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A time as the API shows every time: RFC 3339, milliseconds, UTC.
pub(crate) fn rfc3339(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// What every service of one controlplane shares.
pub struct Shared {
    /// Durable records.
    pub store: Arc<dyn RecordStore>,
    /// Values sealed at rest, in the same database.
    pub sealed: Arc<dyn SealedStore>,
    /// Stubs, tasks and objects, in the same database.
    pub functions: Arc<dyn FunctionStore>,
    /// What tasks printed, in the same database.
    pub logs: Arc<dyn LogStore>,
    /// Stubs read lately.
    pub stubs: functions::stubs::StubCache,
    /// Function inputs, results and the dispatcher's queue, in the hot
    /// state.
    pub tasks: functions::TaskState,
    /// Where the output of tasks is kept (`levers9 logs`).
    pub task_logs: functions::logs::TaskLogs,
    /// The bytes of objects (code).
    pub objects: functions::objects::ObjectStorage,
    /// The workspaces' volumes, mounted here for file transfers.
    pub volumes: levers9_volumes::Volumes,
    /// The image of stubs that name none, when a base image registry is
    /// configured.
    pub base_image: Option<String>,
    /// The keys values are sealed with.
    pub keyring: Keyring,
    /// Hot state.
    pub state: Arc<dyn HotState>,
    /// Token checks.
    pub auth: Arc<auth::Authenticator>,
    /// Workers and containers.
    pub fleet: fleet::Fleet,
    /// The placing of containers on the fleet.
    pub scheduling: scheduler::Scheduling,
    /// `worker.imageRegistry`: where image names without a registry live.
    pub image_registry: String,
    /// Local image storage served as a registry (`imageService.localImages`).
    pub local_images: Option<registry::LocalImages>,
    /// Image builds.
    pub images: images::ImageBuilds,
    /// The bootstrap secret; empty turns bootstrap off.
    pub bootstrap_secret: Secret,
    /// Pools made at run time and machines, in the same database.
    pub machines: Arc<dyn MachineStore>,
    /// `controlplane.objects`: limits of named dicts and queues.
    pub object_limits: levers9_config::ObjectsConfig,
}
