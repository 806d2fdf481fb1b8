//! Debug forms of the messages that carry a secret: every other field is
//! shown, the secret is not.

use std::fmt;

use crate::v1::{
    AuthorizeResponse, CreateMachineResponse, CreateSecretRequest, CreateTokenResponse,
    CreateWorkspaceResponse, JoinMachineResponse, Registered, RunContainer, StorageCredentials,
    UpdateSecretRequest,
};

const HIDDEN: &str = "<redacted>";

impl fmt::Debug for AuthorizeResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizeResponse")
            .field("workspace_id", &self.workspace_id)
            .field("workspace_name", &self.workspace_name)
            .field("token_type", &self.token_type)
            .field("new_token", &HIDDEN)
            .finish()
    }
}

impl fmt::Debug for CreateTokenResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreateTokenResponse")
            .field("token", &self.token)
            .field("secret", &HIDDEN)
            .finish()
    }
}

impl fmt::Debug for CreateWorkspaceResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreateWorkspaceResponse")
            .field("workspace", &self.workspace)
            .field("admin_token", &HIDDEN)
            .finish()
    }
}

impl fmt::Debug for CreateMachineResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreateMachineResponse")
            .field("machine", &self.machine)
            .field("join_token", &HIDDEN)
            .finish()
    }
}

impl fmt::Debug for JoinMachineResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinMachineResponse")
            .field("machine_id", &self.machine_id)
            .field("pool", &self.pool)
            .field("runtime", &self.runtime)
            .field("worker_token", &HIDDEN)
            .finish()
    }
}

impl fmt::Debug for CreateSecretRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreateSecretRequest")
            .field("name", &self.name)
            .field("value", &HIDDEN)
            .finish()
    }
}

impl fmt::Debug for UpdateSecretRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpdateSecretRequest")
            .field("name", &self.name)
            .field("value", &HIDDEN)
            .finish()
    }
}

impl fmt::Debug for StorageCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StorageCredentials")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &HIDDEN)
            .finish()
    }
}

/// Environment values may be opened secrets: names only.
impl fmt::Debug for RunContainer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut env: Vec<&String> = self.env.keys().collect();
        env.sort();
        f.debug_struct("RunContainer")
            .field("request_id", &self.request_id)
            .field("container_id", &self.container_id)
            .field("image", &self.image)
            .field("args", &self.args)
            .field("env_names", &env)
            .field("cpu_millicores", &self.cpu_millicores)
            .field("memory_mib", &self.memory_mib)
            .field("secret_names", &self.secret_names)
            .field("gpu_type", &self.gpu_type)
            .field("gpu_count", &self.gpu_count)
            .field("volumes", &self.volumes)
            .field("volume_storage", &self.volume_storage)
            .finish()
    }
}

/// The volumes' JuiceFS settings it carries hold the metadata password
/// and the bucket keys: only whether any came is shown.
impl fmt::Debug for Registered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registered")
            .field("heartbeat_interval_ms", &self.heartbeat_interval_ms)
            .field("worker_settings_json", &self.worker_settings_json)
            .field(
                "worker_storage_json",
                &if self.worker_storage_json.is_empty() {
                    ""
                } else {
                    HIDDEN
                },
            )
            .field("spares", &self.spares)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_fields_never_show_in_debug() {
        let request = CreateSecretRequest {
            name: "DB".into(),
            value: "hunter2".into(),
        };
        let shown = format!("{request:?}");
        assert!(
            shown.contains("DB") && !shown.contains("hunter2"),
            "{shown}"
        );
        let response = AuthorizeResponse {
            new_token: "l9_secret".into(),
            ..Default::default()
        };
        assert!(!format!("{response:?}").contains("l9_secret"));
        let join = CreateMachineResponse {
            join_token: "l9j_join".into(),
            ..Default::default()
        };
        assert!(!format!("{join:?}").contains("l9j_join"));
        let joined = JoinMachineResponse {
            machine_id: "m1".into(),
            worker_token: "l9_worker".into(),
            ..Default::default()
        };
        let shown = format!("{joined:?}");
        assert!(
            shown.contains("m1") && !shown.contains("l9_worker"),
            "{shown}"
        );
        let run = RunContainer {
            volume_storage: Some(StorageCredentials {
                bucket: "team-a".into(),
                secret_access_key: "wJalrSECRET".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let shown = format!("{run:?}");
        assert!(
            shown.contains("team-a") && !shown.contains("wJalrSECRET"),
            "{shown}"
        );
        let registered = Registered {
            heartbeat_interval_ms: 2500,
            worker_storage_json: r#"{"metaUrl":"redis://:meta-pw@r/1"}"#.into(),
            ..Default::default()
        };
        let shown = format!("{registered:?}");
        assert!(
            shown.contains("2500") && !shown.contains("meta-pw"),
            "{shown}"
        );
    }
}
