//! Connecting to a controlplane: where, with or without TLS, with which
//! token, and with a deadline on every call.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result};
use levers9_api::v1::{
    auth_service_client::AuthServiceClient, cluster_service_client::ClusterServiceClient,
    container_service_client::ContainerServiceClient, dict_service_client::DictServiceClient,
    function_service_client::FunctionServiceClient, image_service_client::ImageServiceClient,
    log_service_client::LogServiceClient, machine_service_client::MachineServiceClient,
    queue_service_client::QueueServiceClient, secret_service_client::SecretServiceClient,
    token_service_client::TokenServiceClient, volume_service_client::VolumeServiceClient,
    worker_service_client::WorkerServiceClient, workspace_service_client::WorkspaceServiceClient,
    AuthorizeRequest, AuthorizeResponse,
};
use levers9_api::{Bearer, BOOTSTRAP_SECRET_METADATA};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A controlplane and the token to call it with.
#[derive(Clone, PartialEq)]
pub struct Target {
    /// Host name or address.
    pub host: String,
    /// gRPC port.
    pub port: u16,
    /// TLS asked for by the context or `LEVERS9_CONTROLPLANE_TLS`.
    pub tls: bool,
    /// CA certificates to trust besides the system's: the context's
    /// `ca_file` or `LEVERS9_CONTROLPLANE_CA`.
    pub ca_file: Option<PathBuf>,
    /// Bearer token; empty for none.
    pub token: String,
}

impl Target {
    /// What to dial, for anything that connects to this target (the CLI's
    /// client, the agent): the TLS decision and the trusted CAs.
    pub fn dial(&self) -> levers9_api::dial::Controlplane {
        levers9_api::dial::Controlplane {
            address: self.address(),
            tls: self.tls,
            ca_file: self.ca_file.clone(),
        }
    }

    /// Hands the target to a Python process (`levers9 run`, image builds)
    /// in the SDK's `LEVERS9_*` variables.
    pub fn export_to(&self, command: &mut std::process::Command) {
        command
            .env("LEVERS9_CONTROLPLANE_HOST", &self.host)
            .env("LEVERS9_CONTROLPLANE_PORT", self.port.to_string())
            .env("LEVERS9_CONTROLPLANE_TLS", self.tls.to_string())
            .env("LEVERS9_TOKEN", &self.token);
        if let Some(ca) = &self.ca_file {
            command.env("LEVERS9_CONTROLPLANE_CA", ca);
        }
    }

    /// `host:port`, with brackets around IPv6 addresses.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

pub(crate) type Authed = InterceptedService<Channel, Bearer>;

/// Clients of every service over one connection.
pub struct Client {
    channel: Channel,
    auth: Bearer,
}

impl Client {
    /// Connects (lazily: the first call dials) to the target.
    pub fn new(target: &Target) -> Result<Client> {
        let endpoint = target
            .dial()
            .endpoint()?
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(CALL_TIMEOUT);
        let auth = if target.token.is_empty() {
            Bearer::none()
        } else {
            Bearer::token(&target.token)?
        };
        Ok(Client {
            channel: endpoint.connect_lazy(),
            auth,
        })
    }

    /// ClusterService.
    pub fn clusters(&self) -> ClusterServiceClient<Authed> {
        ClusterServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// AuthService.
    pub fn auth(&self) -> AuthServiceClient<Authed> {
        AuthServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// TokenService.
    pub fn tokens(&self) -> TokenServiceClient<Authed> {
        TokenServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// WorkspaceService.
    pub fn workspaces(&self) -> WorkspaceServiceClient<Authed> {
        WorkspaceServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// WorkerService.
    pub fn workers(&self) -> WorkerServiceClient<Authed> {
        WorkerServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// ContainerService.
    pub fn containers(&self) -> ContainerServiceClient<Authed> {
        ContainerServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// ImageService.
    pub fn images(&self) -> ImageServiceClient<Authed> {
        ImageServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// FunctionService.
    pub fn functions(&self) -> FunctionServiceClient<Authed> {
        FunctionServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// LogService.
    pub fn logs(&self) -> LogServiceClient<Authed> {
        LogServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// SecretService.
    pub fn secrets(&self) -> SecretServiceClient<Authed> {
        SecretServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// DictService.
    pub fn dicts(&self) -> DictServiceClient<Authed> {
        DictServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// QueueService.
    pub fn queues(&self) -> QueueServiceClient<Authed> {
        QueueServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// VolumeService.
    pub fn volumes(&self) -> VolumeServiceClient<Authed> {
        VolumeServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// MachineService.
    pub fn machines(&self) -> MachineServiceClient<Authed> {
        MachineServiceClient::with_interceptor(self.channel.clone(), self.auth.clone())
    }

    /// Asks for the first admin token of an empty install.
    pub async fn bootstrap(&self, secret: &str) -> Result<AuthorizeResponse> {
        let mut request = tonic::Request::new(AuthorizeRequest {});
        let value = secret
            .parse()
            .context("LEVERS9_BOOTSTRAP_SECRET must be printable ASCII")?;
        request
            .metadata_mut()
            .insert(BOOTSTRAP_SECRET_METADATA, value);
        let response = self.auth().authorize(request).await?;
        Ok(response.into_inner())
    }
}
