//! The hardening keys the controlplane hands a worker when it attaches
//! (`Registered.worker_settings_json`). A worker started with no config
//! file (a Kubernetes Job, a machine or cluster agent) would otherwise run
//! on the shipped values whatever `worker.containerSecurity` and
//! `worker.pools.<name>.security` say on the controlplane.
//!
//! The worker keeps, key by key, the stricter of the controlplane's value
//! and its own config's: the controlplane's keys harden every worker from
//! one place, and a worker's own file can only tighten them further (so a
//! stale or forged message never loosens a worker its operator hardened).

use levers9_config::WorkerConfig;

use crate::security::{PoolOrigin, SecurityPolicy};

/// Why the controlplane's settings were not applied.
#[derive(Debug, thiserror::Error)]
#[error("the controlplane's worker settings are not a worker config section: {0}")]
pub struct SettingsError(#[from] serde_json::Error);

/// `local` tightened by the policy that `json` (a `worker` section from
/// the controlplane) gives a worker of `local.pool` from `origin`: an
/// attached cluster's pool takes the worker-wide keys, as it does locally.
///
/// # Errors
/// `json` is not a `worker` section the config schema accepts.
pub fn apply_controlplane_settings(
    local: &SecurityPolicy,
    json: &str,
    origin: PoolOrigin,
) -> Result<SecurityPolicy, SettingsError> {
    let sent: WorkerConfig = serde_json::from_str(json)?;
    let theirs = SecurityPolicy::resolve(&sent, &local.pool, origin);
    Ok(SecurityPolicy {
        pool: local.pool.clone(),
        profile: local.profile.tightened_by(&theirs.profile),
        server_auth: local.server_auth.max(theirs.server_auth),
        mounts: local.mounts.max(theirs.mounts),
    })
}

#[cfg(test)]
mod tests {
    use levers9_config::{
        ContainerServerAuthMode, PoolConfig, SeccompSetting, SecurityProfileName,
        VolumeMountValidationMode, WorkerConfig,
    };
    use levers9_runtime::SeccompMode;

    use super::*;

    /// The controlplane's config: pool `gpu` hardened, the rest shipped.
    fn controlplane() -> String {
        let mut config = WorkerConfig::default();
        let mut gpu = PoolConfig::default();
        gpu.security.profile = Some(SecurityProfileName::Hardened);
        gpu.container_server_auth = Some(ContainerServerAuthMode::Enforce);
        config.pools.insert("gpu".into(), gpu);
        config.volume_mount_validation = VolumeMountValidationMode::Enforce;
        config.hardening_json_for("gpu")
    }

    fn shipped(pool: &str) -> SecurityPolicy {
        SecurityPolicy::resolve(&WorkerConfig::default(), pool, PoolOrigin::Configured)
    }

    #[test]
    fn a_worker_with_no_config_takes_its_pools_override_from_the_controlplane() {
        let local = shipped("gpu");

        let applied =
            apply_controlplane_settings(&local, &controlplane(), PoolOrigin::Configured).unwrap();

        assert!(applied.profile.read_only_rootfs, "{applied:?}");
        assert_eq!(applied.profile.seccomp, SeccompMode::Enforce);
        assert_eq!(applied.server_auth, ContainerServerAuthMode::Enforce);
        assert_eq!(applied.mounts, VolumeMountValidationMode::Enforce);
        assert!(
            !local.profile.read_only_rootfs,
            "the shipped value is looser"
        );
    }

    #[test]
    fn an_attached_clusters_worker_takes_the_worker_wide_keys() {
        let applied = apply_controlplane_settings(
            &shipped("gpu"),
            &controlplane(),
            PoolOrigin::AttachedCluster,
        )
        .unwrap();

        assert!(!applied.profile.read_only_rootfs, "{applied:?}");
        assert_eq!(applied.server_auth, ContainerServerAuthMode::Observe);
        assert_eq!(applied.mounts, VolumeMountValidationMode::Enforce);
    }

    #[test]
    fn the_controlplane_cannot_loosen_what_the_workers_own_config_tightens() {
        let mut own = WorkerConfig::default();
        own.container_security.seccomp = Some(SeccompSetting::Enforce);
        own.container_server_auth = ContainerServerAuthMode::Enforce;
        let local = SecurityPolicy::resolve(&own, "default", PoolOrigin::Configured);
        let mut theirs = WorkerConfig::default();
        theirs.container_security.seccomp = Some(SeccompSetting::Off);
        theirs.container_server_auth = ContainerServerAuthMode::Off;
        let json = theirs.hardening_json_for("default");

        let applied = apply_controlplane_settings(&local, &json, PoolOrigin::Configured).unwrap();

        assert_eq!(applied.profile.seccomp, SeccompMode::Enforce);
        assert_eq!(applied.server_auth, ContainerServerAuthMode::Enforce);
    }

    #[test]
    fn settings_the_schema_refuses_are_an_error() {
        let error = apply_controlplane_settings(
            &shipped("default"),
            r#"{"containerSecurity": {"seccomp": "sometimes"}}"#,
            PoolOrigin::Configured,
        )
        .unwrap_err();

        assert!(
            error.to_string().contains("not a worker config section"),
            "{error}"
        );
    }
}
