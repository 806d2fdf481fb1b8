//! The gRPC services, one file each. The REST mapping calls the same
//! implementations.

mod auth;
mod cluster;
mod container;
mod convert;
mod deployment;
mod dict;
mod function;
mod image;
mod log;
mod machine;
mod objects;
mod queue;
mod run_driver;
mod schedule;
mod secret;
mod stub;
mod token;
mod volume;
mod worker;
mod workspace;

pub use auth::AuthApi;
pub use cluster::ClusterApi;
pub use container::ContainerApi;
pub use dict::DictApi;
pub use function::FunctionApi;
pub use image::ImageApi;
pub use log::LogApi;
pub use machine::MachineApi;
pub use queue::QueueApi;
pub(crate) use queue::INBOX_PREFIX;
pub use secret::SecretApi;
pub use token::TokenApi;
pub use volume::VolumeApi;
pub use worker::WorkerApi;
pub use workspace::WorkspaceApi;

use std::sync::Arc;

use levers9_store::{NewToken, NewWorkspace, TokenType};

use crate::auth::token::{mint, MintedToken};
use crate::{new_id, Shared};

/// A new workspace and its admin token, not yet stored.
fn new_workspace_with_admin(
    name: &str,
    description: &str,
) -> (NewWorkspace, NewToken, MintedToken) {
    let now = chrono::Utc::now();
    let workspace = NewWorkspace {
        id: new_id(),
        name: name.to_owned(),
        created_at: now,
    };
    let minted = mint();
    let record = NewToken {
        id: new_id(),
        workspace_id: workspace.id.clone(),
        token_type: TokenType::Admin,
        description: description.to_owned(),
        hash: minted.hash.clone(),
        created_at: now,
    };
    (workspace, record, minted)
}

/// Every service, sharing one [`Shared`].
#[derive(Clone)]
pub struct Services {
    /// AuthService.
    pub auth: Arc<AuthApi>,
    /// TokenService.
    pub token: Arc<TokenApi>,
    /// WorkspaceService.
    pub workspace: Arc<WorkspaceApi>,
    /// SecretService.
    pub secret: Arc<SecretApi>,
    /// WorkerService.
    pub worker: Arc<WorkerApi>,
    /// ContainerService.
    pub container: Arc<ContainerApi>,
    /// FunctionService.
    pub function: Arc<FunctionApi>,
    /// VolumeService.
    pub volume: Arc<VolumeApi>,
    /// ImageService.
    pub image: Arc<ImageApi>,
    /// MachineService.
    pub machine: Arc<MachineApi>,
    /// ClusterService.
    pub cluster: Arc<ClusterApi>,
    /// DictService.
    pub dict: Arc<DictApi>,
    /// QueueService.
    pub queue: Arc<QueueApi>,
    /// LogService.
    pub log: Arc<LogApi>,
}

impl Services {
    /// Builds every service over the shared state.
    pub fn new(shared: Arc<Shared>) -> Self {
        Self {
            auth: Arc::new(AuthApi::new(shared.clone())),
            token: Arc::new(TokenApi::new(shared.clone())),
            workspace: Arc::new(WorkspaceApi::new(shared.clone())),
            secret: Arc::new(SecretApi::new(shared.clone())),
            worker: Arc::new(WorkerApi::new(shared.clone())),
            container: Arc::new(ContainerApi::new(shared.clone())),
            function: Arc::new(FunctionApi::new(shared.clone())),
            volume: Arc::new(VolumeApi::new(shared.clone())),
            cluster: Arc::new(ClusterApi::new(shared.clone())),
            image: Arc::new(ImageApi::new(shared.clone())),
            dict: Arc::new(DictApi::new(shared.clone())),
            queue: Arc::new(QueueApi::new(shared.clone())),
            log: Arc::new(LogApi::new(shared.clone())),
            machine: Arc::new(MachineApi::new(shared)),
        }
    }
}
