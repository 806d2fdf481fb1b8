//! What the controlplane keeps about workers and containers in the hot state.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use levers9_api::v1::{
    controlplane_message, Container, ControlplaneMessage, ObjectMount, RunContainer, VolumeMount,
};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::fleet::FleetError;

/// A worker as it registered, kept in the hot state under `worker:<id>` so any
/// replica can read it; whether it is alive is a separate key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerRecord {
    /// Chosen by the worker, stable across its reconnects.
    pub id: String,
    /// The pool it serves.
    pub pool: String,
    /// The host name the worker reported when it registered, for people.
    pub hostname: String,
    /// runc or gvisor.
    pub runtime: String,
    /// Total CPU.
    pub cpu_millicores: u64,
    /// Total memory.
    pub memory_mib: u64,
    /// GPUs: type and device ids.
    pub gpus: Vec<(String, Vec<String>)>,
    /// The last heartbeat seen by any replica.
    pub last_heartbeat_at: DateTime<Utc>,
    /// The token the worker registered with: a worker token may drain or
    /// cordon only the workers it registered. Empty on records written
    /// before it was kept, which only admins may then drain.
    #[serde(default)]
    pub token_id: String,
}

/// Where a container stands, as users see it. Stored (and shown) as its
/// lower-case name, the text [`ContainerState::as_str`] gives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerState {
    /// Waiting for a worker with room.
    #[default]
    Pending,
    /// Placed on a worker, not yet running.
    Scheduled,
    /// Running.
    Running,
    /// Ended by itself or by a stop; exit_code says how.
    Exited,
    /// Never ran: image pull or runtime start failed, or no worker could take it.
    Failed,
    /// Its worker stopped heartbeating.
    Lost,
}

impl ContainerState {
    /// Every state, in the order a container usually meets them.
    #[cfg(test)]
    pub(crate) const ALL: [ContainerState; 6] = [
        ContainerState::Pending,
        ContainerState::Scheduled,
        ContainerState::Running,
        ContainerState::Exited,
        ContainerState::Failed,
        ContainerState::Lost,
    ];

    /// As stored, and as the API and workers name it.
    pub fn as_str(self) -> &'static str {
        match self {
            ContainerState::Pending => "pending",
            ContainerState::Scheduled => "scheduled",
            ContainerState::Running => "running",
            ContainerState::Exited => "exited",
            ContainerState::Failed => "failed",
            ContainerState::Lost => "lost",
        }
    }

    /// Whether a container in this state will change no more.
    pub fn is_final(self) -> bool {
        match self {
            ContainerState::Pending | ContainerState::Scheduled | ContainerState::Running => false,
            ContainerState::Exited | ContainerState::Failed | ContainerState::Lost => true,
        }
    }
}

impl std::fmt::Display for ContainerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A container request and what became of it. New requests start from
/// [`ContainerRecord::pending`], so a new field gets its default in one place.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerRecord {
    /// `c-` and a uuid v7 without dashes ([`ContainerRecord::pending`]); the
    /// runtime's container id too.
    pub id: String,
    /// Whose it is.
    pub workspace_id: String,
    /// Reference of the image its worker pulls and runs it from.
    pub image: String,
    /// The command and its arguments; empty runs the image's own.
    pub args: Vec<String>,
    /// Environment variables.
    pub env: BTreeMap<String, String>,
    /// The pool it runs in.
    pub pool: String,
    /// CPU reserved.
    pub cpu_millicores: u64,
    /// Memory reserved.
    pub memory_mib: u64,
    /// Where it stands.
    pub state: ContainerState,
    /// The worker it was placed on, once placed.
    pub worker_id: String,
    /// Exit code once exited.
    pub exit_code: i32,
    /// Whether the kernel's OOM killer ended it.
    pub oom_killed: bool,
    /// Why it failed or was lost.
    pub message: String,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
    /// Names of the workspace secrets it gets as environment variables.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// GPU types it accepts, in order of preference; empty for none.
    #[serde(default)]
    pub gpu_types: Vec<String>,
    /// The type it got, once placed.
    #[serde(default)]
    pub gpu_type: String,
    /// How many GPUs (all of one type).
    #[serde(default)]
    pub gpu_count: u32,
    /// The stub whose inputs it serves, for a function container.
    #[serde(default)]
    pub stub_id: String,
    /// Objects mounted read-only: digest, target, whether to unpack.
    #[serde(default)]
    pub objects: Vec<(String, String, bool)>,
    /// Digests of those objects whose Python modules its worker may
    /// compile for the image (the SDK's).
    #[serde(default)]
    pub compiled_objects: Vec<String>,
    /// Whether it gets a container server (function containers do).
    #[serde(default)]
    pub container_server: bool,
    /// Its working directory; empty means the image's.
    #[serde(default)]
    pub working_dir: String,
    /// Volumes of its workspace bound in: name, mount path.
    #[serde(default)]
    pub volumes: Vec<(String, String)>,
    /// Whether it shares its worker's network namespace (image builds).
    #[serde(default)]
    pub host_network: bool,
    /// Registries whose credentials it gets as it goes to its worker
    /// (image builds); only the hosts are stored.
    #[serde(default)]
    pub registry_auth_hosts: Vec<String>,
}

impl ContainerRecord {
    /// The container as the API shows it; its time in RFC 3339 with
    /// milliseconds, as every time the API shows.
    pub fn to_api(&self) -> Container {
        Container {
            container_id: self.id.clone(),
            image: self.image.clone(),
            pool: self.pool.clone(),
            worker_id: self.worker_id.clone(),
            state: crate::wire_states::container_state(self.state).into(),
            exit_code: self.exit_code,
            oom_killed: self.oom_killed,
            message: self.message.clone(),
            created_at: crate::rfc3339(self.created_at),
            args: self.args.clone(),
            secrets: self.secrets.clone(),
            gpu_type: self.gpu_type.clone(),
            gpu_count: self.gpu_count,
        }
    }

    /// A new request of `workspace_id` to run `image`, waiting for a place:
    /// a fresh id, created now, every other field empty or zero. Callers set
    /// theirs with `ContainerRecord { args, .., ..ContainerRecord::pending(..) }`.
    pub fn pending(workspace_id: impl Into<String>, image: impl Into<String>) -> Self {
        Self {
            id: format!("c-{}", uuid::Uuid::now_v7().simple()),
            workspace_id: workspace_id.into(),
            image: image.into(),
            state: ContainerState::Pending,
            created_at: Utc::now(),
            ..Self::default()
        }
    }

    /// The capacity counters it holds on its worker.
    pub fn amounts(&self) -> Vec<(String, i64)> {
        let mut amounts = vec![
            (
                super::CPU.to_owned(),
                i64::try_from(self.cpu_millicores).unwrap_or(i64::MAX),
            ),
            (
                super::MEMORY.to_owned(),
                i64::try_from(self.memory_mib).unwrap_or(i64::MAX),
            ),
        ];
        if self.gpu_count > 0 && !self.gpu_type.is_empty() {
            amounts.push((
                super::gpu_counter(&self.gpu_type),
                i64::from(self.gpu_count),
            ));
        }
        amounts
    }

    /// The run request sent to its worker once it is placed.
    pub fn run_request(&self) -> ControlplaneMessage {
        ControlplaneMessage {
            kind: Some(controlplane_message::Kind::Run(RunContainer {
                request_id: uuid::Uuid::now_v7().to_string(),
                container_id: self.id.clone(),
                image: self.image.clone(),
                args: self.args.clone(),
                env: self.env.clone().into_iter().collect(),
                cpu_millicores: self.cpu_millicores,
                memory_mib: self.memory_mib,
                secret_names: self.secrets.clone(),
                workspace_id: self.workspace_id.clone(),
                gpu_type: self.gpu_type.clone(),
                gpu_count: if self.gpu_type.is_empty() {
                    0
                } else {
                    self.gpu_count
                },
                objects: self
                    .objects
                    .iter()
                    .map(|(digest, target, unpack)| ObjectMount {
                        digest: digest.clone(),
                        target: target.clone(),
                        unpack: *unpack,
                        compile: self.compiled_objects.contains(digest),
                    })
                    .collect(),
                container_server: self.container_server,
                working_dir: self.working_dir.clone(),
                volumes: self
                    .volumes
                    .iter()
                    .map(|(name, mount_path)| VolumeMount {
                        name: name.clone(),
                        mount_path: mount_path.clone(),
                    })
                    .collect(),
                host_network: self.host_network,
                volume_storage: None,
                registry_auth_hosts: self.registry_auth_hosts.clone(),
            })),
        }
    }
}

/// Encodes a record for the hot state.
pub fn encode<T: Serialize>(record: &T) -> Vec<u8> {
    // Records are plain structs of strings and numbers: serialising them
    // cannot fail.
    serde_json::to_vec(record).unwrap_or_default()
}

/// Decodes a record written by [`encode`].
pub fn decode<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, FleetError> {
    serde_json::from_slice(bytes).map_err(|source| FleetError::CorruptRecord {
        what: what.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_stores_its_state_as_the_name_users_see() {
        for state in ContainerState::ALL {
            let record = ContainerRecord {
                state,
                ..ContainerRecord::default()
            };
            let json: serde_json::Value = serde_json::from_slice(&encode(&record)).unwrap();
            assert_eq!(json["state"], state.as_str());
            let back: ContainerRecord = decode("container", &encode(&record)).unwrap();
            assert_eq!(back.state, state);
        }
    }

    #[test]
    fn only_exited_failed_and_lost_are_final() {
        let finals: Vec<ContainerState> = ContainerState::ALL
            .into_iter()
            .filter(|s| s.is_final())
            .collect();
        assert_eq!(
            finals,
            [
                ContainerState::Exited,
                ContainerState::Failed,
                ContainerState::Lost
            ]
        );
    }
}
