//! Container hardening on this worker: which [`SecurityProfile`] each
//! container gets, whether its container server asks for a credential, and
//! whether its mounts are checked.
//!
//! # Precedence
//! `worker.containerSecurity` < `worker.pools.<pool>.security` < the stub's
//! tightening. Each level starts from its `profile` (if it names one) and
//! then sets the keys it gives; a key it leaves out keeps the level below.
//! A stub can only tighten: `LEVERS9_SECURITY_PROFILE=hardened` or
//! `LEVERS9_SECCOMP=observe|enforce` in its environment makes its
//! containers stricter than its pool; asking for less in a key it names (or
//! for a value that does not exist) fails the container's start with
//! [`StubRefused`], which names the pool, the setting and what to ask for
//! instead (see [`SecurityPolicy::for_stub`]).
//!
//! # Attached clusters
//! An attached cluster's pool is built in code, not read from
//! `worker.pools`, so its workers ([`PoolOrigin::AttachedCluster`]) take
//! the worker-wide values and ignore any `worker.pools.<name>` override of
//! the same name: such a pool is hardened by switching the global value.

mod mounts;
mod seccomp_log;
mod stub;
mod violations;

use levers9_config::{
    CapabilitiesSetting, ContainerSecurityConfig, ContainerServerAuthMode, SeccompSetting,
    SecurityProfileName, VolumeMountValidationMode, WorkerConfig,
};
use std::path::Path;

use levers9_runtime::{CapabilitySet, ContainerSpec, SeccompMode, SecurityProfile};

pub use mounts::{check_mount_target, validate_mounts, MountRefused};
pub use seccomp_log::{follow as follow_seccomp_log, Following, StubOf};
pub use stub::StubRefused;
pub use violations::{Check, SecurityMetrics, Subject};

/// The stub's variable asking for a profile.
pub const PROFILE_VARIABLE: &str = "LEVERS9_SECURITY_PROFILE";
/// The stub's variable asking for a seccomp mode.
pub const SECCOMP_VARIABLE: &str = "LEVERS9_SECCOMP";

/// Where the worker's pool was defined, which decides whether its
/// `worker.pools.<name>` overrides apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PoolOrigin {
    /// A pool of the configuration: its overrides apply.
    #[default]
    Configured,
    /// The pool of an attached cluster, built in code: worker-wide values
    /// only.
    AttachedCluster,
}

/// What a worker applies to its containers, resolved once at start.
#[derive(Debug, Clone, PartialEq)]
pub struct SecurityPolicy {
    /// The worker's pool, named in logs and metrics.
    pub pool: String,
    /// The pool's profile, before any stub tightens it.
    pub profile: SecurityProfile,
    /// The container server's credential check.
    pub server_auth: ContainerServerAuthMode,
    /// The check of mount targets.
    pub mounts: VolumeMountValidationMode,
}

impl Default for SecurityPolicy {
    /// The shipped configuration, for pool `default`.
    fn default() -> Self {
        SecurityPolicy::resolve(&WorkerConfig::default(), "default", PoolOrigin::Configured)
    }
}

/// Why a container was not started under its policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HardenRefused {
    /// Its stub asked for looser security than its pool's, or for a value
    /// that does not exist.
    #[error(transparent)]
    Stub(#[from] StubRefused),
    /// A mount refused under `volumeMountValidation: enforce`.
    #[error(transparent)]
    Mount(#[from] MountRefused),
}

impl SecurityPolicy {
    /// The policy of a worker in `pool` under `config` (see the module docs
    /// for the precedence and the attached-cluster rule).
    pub fn resolve(config: &WorkerConfig, pool: &str, origin: PoolOrigin) -> SecurityPolicy {
        let pool_config = match origin {
            PoolOrigin::Configured => config.pools.get(pool),
            PoolOrigin::AttachedCluster => None,
        };
        let mut profile = apply(SecurityProfile::default(), &config.container_security, true);
        let mut server_auth = config.container_server_auth;
        if let Some(pool_config) = pool_config {
            profile = apply(profile, &pool_config.security, false);
            server_auth = pool_config.container_server_auth.unwrap_or(server_auth);
        }
        SecurityPolicy {
            pool: pool.to_owned(),
            profile,
            server_auth,
            mounts: config.volume_mount_validation,
        }
    }

    /// Hardens `spec` before its container starts: its profile is the
    /// pool's, tightened by what its environment asks for, and its mounts
    /// are checked against its root filesystem `rootfs`.
    ///
    /// # Errors
    /// A stub's request the pool does not grant (counted under
    /// [`Check::StubLoosening`] whatever the modes: a stub never loosens its
    /// pool), or a mount refused under `volumeMountValidation: enforce`.
    pub fn harden(
        &self,
        spec: &mut ContainerSpec,
        rootfs: &Path,
        subject: &Subject,
        metrics: &SecurityMetrics,
    ) -> Result<(), HardenRefused> {
        match self.for_stub(&spec.env) {
            Ok(profile) => spec.security = profile,
            Err(refused) => {
                for reason in &refused.reasons {
                    metrics.record(Check::StubLoosening, "enforce", subject, reason);
                }
                return Err(refused.into());
            }
        }
        validate_mounts(&spec.mounts, rootfs, self.mounts, subject, metrics)?;
        Ok(())
    }
}

/// One level of configuration over `below`. `profile` resets every key to
/// the named profile; the worker-wide level (`global`) always starts from
/// one, `default` when it names none.
fn apply(below: SecurityProfile, level: &ContainerSecurityConfig, global: bool) -> SecurityProfile {
    let start = match (level.profile, global) {
        (Some(name), _) => profile_of(name),
        (None, true) => profile_of(SecurityProfileName::Default),
        (None, false) => below,
    };
    SecurityProfile {
        seccomp: level.seccomp.map(seccomp_mode).unwrap_or(start.seccomp),
        capabilities: level
            .capabilities
            .map(|c| match c {
                CapabilitiesSetting::Default => CapabilitySet::Default,
                CapabilitiesSetting::Minimal => CapabilitySet::Minimal,
            })
            .unwrap_or(start.capabilities),
        no_new_privileges: level.no_new_privileges.unwrap_or(start.no_new_privileges),
        read_only_rootfs: level.read_only_rootfs.unwrap_or(start.read_only_rootfs),
        user_namespace: level.user_namespace.unwrap_or(start.user_namespace),
        masked_paths: level.masked_paths.clone().unwrap_or(start.masked_paths),
        readonly_paths: level.readonly_paths.clone().unwrap_or(start.readonly_paths),
    }
}

/// The values a profile name stands for. `default` observes with seccomp:
/// today's behaviour, plus a kernel log line per call the hardened rules
/// would refuse.
fn profile_of(name: SecurityProfileName) -> SecurityProfile {
    match name {
        SecurityProfileName::Default => SecurityProfile {
            seccomp: SeccompMode::Observe,
            ..SecurityProfile::default()
        },
        SecurityProfileName::Hardened => SecurityProfile::hardened(),
    }
}

/// `off` keeps the baseline filter every container has always had: the
/// key switches the hardened rules, never the baseline.
fn seccomp_mode(setting: SeccompSetting) -> SeccompMode {
    match setting {
        SeccompSetting::Off => SeccompMode::Default,
        SeccompSetting::Observe => SeccompMode::Observe,
        SeccompSetting::Enforce => SeccompMode::Enforce,
    }
}

fn seccomp_name(mode: SeccompMode) -> &'static str {
    match mode {
        SeccompMode::Off | SeccompMode::Default => "off",
        SeccompMode::Observe => "observe",
        SeccompMode::Enforce => "enforce",
    }
}

#[cfg(test)]
mod tests;
