//! Container hardening keys: `worker.containerSecurity`,
//! `worker.pools.<name>.security`, `worker.containerServerAuth` (also per
//! pool) and `worker.volumeMountValidation`.
//!
//! Every key ships as today's behaviour or an observe mode, so upgrading
//! changes nothing but logging. How the levels combine (worker-wide < pool
//! < a stub's tightening) is the worker's business; here a key left out is
//! `None`, which means "inherit".

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// `worker.containerSecurity.*` and `worker.pools.<name>.security.*`. A key
/// left out inherits: from the worker-wide value for a pool, from `profile`
/// for the worker-wide value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ContainerSecurityConfig {
    /// The shorthand every other key starts from at this level.
    pub profile: Option<SecurityProfileName>,
    /// The hardened seccomp rules, on top of the baseline filter every
    /// container has.
    pub seccomp: Option<SeccompSetting>,
    /// Which Linux capabilities the container's processes keep: `default`
    /// (three) or `minimal` (none).
    pub capabilities: Option<CapabilitiesSetting>,
    /// `no_new_privs` for the container's processes.
    pub no_new_privileges: Option<bool>,
    /// Mount the root filesystem read-only.
    pub read_only_rootfs: Option<bool>,
    /// Map container root to an unprivileged host uid.
    pub user_namespace: Option<bool>,
    /// Paths to hide, besides runc's defaults.
    pub masked_paths: Option<Vec<String>>,
    /// Paths to make read-only, besides runc's defaults.
    pub readonly_paths: Option<Vec<String>>,
}

/// `profile`: a shorthand for a set of values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SecurityProfileName {
    /// Today's behaviour, with seccomp observing.
    Default,
    /// Seccomp enforced, no capabilities, no new privileges, a read-only
    /// root, extra masked paths.
    Hardened,
}

/// `seccomp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SeccompSetting {
    /// Only the baseline filter containers have always had.
    Off,
    /// The hardened rules log (`SCMP_ACT_LOG`) and allow.
    Observe,
    /// The hardened rules refuse with EPERM.
    Enforce,
}

/// `capabilities`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CapabilitiesSetting {
    /// `CAP_AUDIT_WRITE`, `CAP_KILL`, `CAP_NET_BIND_SERVICE`, as today.
    Default,
    /// None.
    Minimal,
}

/// `containerServerAuth`: whether the container server asks the runner for
/// its per-container credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerServerAuthMode {
    /// No credential is issued or checked.
    Off,
    /// A credential is issued; a runner without it is logged and served.
    Observe,
    /// A runner without the credential is refused.
    Enforce,
}

/// `volumeMountValidation`: mount targets that shadow system paths or
/// escape through `..` or symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VolumeMountValidationMode {
    /// Not checked.
    Off,
    /// Logged, and mounted.
    Log,
    /// Refused: the container does not start.
    Enforce,
}

impl ContainerSecurityConfig {
    /// Checks the paths: `key` names this level in the error
    /// (`worker.containerSecurity` or the pool's).
    pub(crate) fn validate(&self, level: &str) -> Result<(), ConfigError> {
        for (key, paths) in [
            ("maskedPaths", &self.masked_paths),
            ("readonlyPaths", &self.readonly_paths),
        ] {
            if let Some(bad) = paths.iter().flatten().find(|p| !is_plain_absolute(p)) {
                return Err(ConfigError::Invalid {
                    key: "worker.containerSecurity",
                    message: format!(
                        "{level}.{key}: {bad:?} must be an absolute path without `..`"
                    ),
                });
            }
        }
        Ok(())
    }
}

fn is_plain_absolute(path: &str) -> bool {
    path.starts_with('/') && !path.split('/').any(|part| part == "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_camel_case_and_values_lowercase() {
        let parsed: ContainerSecurityConfig = serde_yaml::from_str(
            "profile: hardened\nseccomp: enforce\ncapabilities: minimal\nnoNewPrivileges: true\n\
             readOnlyRootfs: true\nuserNamespace: false\nmaskedPaths: [/proc/x]\nreadonlyPaths: []\n",
        )
        .expect("parses");
        assert_eq!(parsed.profile, Some(SecurityProfileName::Hardened));
        assert_eq!(parsed.capabilities, Some(CapabilitiesSetting::Minimal));
        assert_eq!(parsed.masked_paths, Some(vec!["/proc/x".to_string()]));
        let unknown = serde_yaml::from_str::<ContainerSecurityConfig>("seccomp: strict\n");
        assert!(unknown.is_err());
    }

    #[test]
    fn relative_or_escaping_paths_are_refused() {
        let config = ContainerSecurityConfig {
            masked_paths: Some(vec!["/proc/../etc".into()]),
            ..Default::default()
        };
        let error = config
            .validate("worker.pools.gpu.security")
            .expect_err("refused")
            .to_string();
        assert!(
            error.contains("worker.pools.gpu.security.maskedPaths: \"/proc/../etc\""),
            "{error}"
        );
    }
}
