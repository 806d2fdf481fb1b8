//! The controlplane as the API reaches it: plain gRPC to the in-cluster
//! name, every call with the API's bearer token and a deadline.

use std::time::Duration;

use levers9_api::v1::{
    container_service_client::ContainerServiceClient,
    function_service_client::FunctionServiceClient, secret_service_client::SecretServiceClient,
    token_service_client::TokenServiceClient, volume_service_client::VolumeServiceClient,
    worker_service_client::WorkerServiceClient, workspace_service_client::WorkspaceServiceClient,
};
use levers9_api::Bearer;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Unary calls; log streams are long-lived and have none.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(15);

type Authed = InterceptedService<Channel, Bearer>;

/// Why the controlplane connection could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("controlplane address {0}: {1}")]
    Address(String, tonic::transport::Error),
    #[error("LEVERS9_TOKEN holds characters a gRPC header cannot carry")]
    Token,
}

/// One lazily-dialled connection, with a client per service.
#[derive(Clone)]
pub struct Controlplane {
    channel: Channel,
    bearer: Bearer,
}

impl Controlplane {
    pub fn new(address: &str, token: &str) -> Result<Controlplane, ConnectError> {
        let channel = Endpoint::from_shared(address.to_owned())
            .map_err(|e| ConnectError::Address(address.to_owned(), e))?
            .connect_timeout(CONNECT_TIMEOUT)
            .connect_lazy();
        let bearer = Bearer::token(token).map_err(|_| ConnectError::Token)?;
        Ok(Controlplane { channel, bearer })
    }

    fn authed(&self) -> Authed {
        InterceptedService::new(self.channel.clone(), self.bearer.clone())
    }

    pub fn functions(&self) -> FunctionServiceClient<Authed> {
        FunctionServiceClient::new(self.authed())
    }
    pub fn containers(&self) -> ContainerServiceClient<Authed> {
        ContainerServiceClient::new(self.authed())
    }
    pub fn workers(&self) -> WorkerServiceClient<Authed> {
        WorkerServiceClient::new(self.authed())
    }
    pub fn secrets(&self) -> SecretServiceClient<Authed> {
        SecretServiceClient::new(self.authed())
    }
    pub fn tokens(&self) -> TokenServiceClient<Authed> {
        TokenServiceClient::new(self.authed())
    }
    pub fn volumes(&self) -> VolumeServiceClient<Authed> {
        VolumeServiceClient::new(self.authed())
    }
    pub fn workspaces(&self) -> WorkspaceServiceClient<Authed> {
        WorkspaceServiceClient::new(self.authed())
    }
}

/// A request with the unary deadline.
pub fn call<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(CALL_TIMEOUT);
    request
}
