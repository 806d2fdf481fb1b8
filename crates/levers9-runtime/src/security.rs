//! The hardening profile of a container: which of the runtime's protections
//! beyond today's baseline it gets, and how two profiles compare.
//!
//! [`SecurityProfile::default`] is exactly what every container got before
//! the profile existed, so a worker that resolves nothing still behaves as
//! it always did. Each field has an order from loose to strict, which is
//! what lets a stub tighten its pool's profile but never loosen it
//! ([`SecurityProfile::tightened_by`]).
//!
//! What applies under gVisor (`runsc`): the Sentry implements capabilities,
//! `noNewPrivileges`, a read-only root and the seccomp rules of
//! [`SeccompMode::Enforce`] itself. It cannot report `SCMP_ACT_LOG` to the
//! host, so [`SeccompMode::Observe`] adds no rules there, and its sandbox
//! is already a user-space kernel, so [`SecurityProfile::user_namespace`]
//! and the masked and read-only paths of `/proc` and `/sys` (which are the
//! Sentry's own, not the host's) are not passed to it.

/// Host uid and gid that container root maps to under a user namespace: far
/// above the ids distributions hand out, so it owns nothing on the host.
pub const USER_NAMESPACE_HOST_ID: u32 = 1_000_000;
/// Ids mapped, from [`USER_NAMESPACE_HOST_ID`] up: the 16-bit range images
/// use for their users.
pub const USER_NAMESPACE_SIZE: u32 = 65_536;

/// Paths the hardened profile masks besides runc's defaults: the power
/// meters that leak what other tenants compute (the PLATYPUS attack; Docker
/// masks them too) and the kernel's symbol addresses, which defeat KASLR
/// when read by root.
pub const HARDENED_MASKED_PATHS: &[&str] = &["/sys/devices/virtual/powercap", "/proc/kallsyms"];

/// The seccomp rules a container gets. Every mode keeps the baseline
/// allow-list (see `seccomp.rs`), which containers have always had; the
/// modes differ in the extra rules of the hardened profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub enum SeccompMode {
    /// No OCI seccomp profile at all. Never chosen from configuration, only
    /// by code that needs an unfiltered container (and by tests, as a
    /// control).
    Off,
    /// The baseline allow-list, denying the rest with EPERM.
    #[default]
    Default,
    /// The baseline, plus the hardened rules with `SCMP_ACT_LOG`: the kernel
    /// logs each call the hardened profile would refuse, and lets it run.
    Observe,
    /// The baseline, plus the hardened rules refusing with EPERM.
    Enforce,
}

/// The capability set of the container's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub enum CapabilitySet {
    /// `CAP_AUDIT_WRITE`, `CAP_KILL`, `CAP_NET_BIND_SERVICE`, as `runc spec`.
    #[default]
    Default,
    /// None at all: container root is an ordinary user towards the kernel.
    Minimal,
}

/// The hardening of one container. The default is today's baseline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SecurityProfile {
    /// Syscall filtering.
    pub seccomp: SeccompMode,
    /// Capabilities of the process.
    pub capabilities: CapabilitySet,
    /// `no_new_privs`: setuid binaries and file capabilities grant nothing.
    pub no_new_privileges: bool,
    /// The root filesystem is mounted read-only (mounts such as `/tmp`,
    /// `/dev/shm` and volumes stay writable).
    pub read_only_rootfs: bool,
    /// Run in a user namespace where container root is host uid
    /// [`USER_NAMESPACE_HOST_ID`]. The root filesystem must be readable by
    /// that uid (world-readable, as image layers are).
    pub user_namespace: bool,
    /// Paths hidden (bind-mounted over) besides runc's defaults.
    pub masked_paths: Vec<String>,
    /// Paths made read-only besides runc's defaults.
    pub readonly_paths: Vec<String>,
}

impl Default for SecurityProfile {
    fn default() -> Self {
        SecurityProfile {
            seccomp: SeccompMode::Default,
            capabilities: CapabilitySet::Default,
            no_new_privileges: true,
            read_only_rootfs: false,
            user_namespace: false,
            masked_paths: Vec::new(),
            readonly_paths: Vec::new(),
        }
    }
}

/// One field of a profile that is looser than in another profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileField {
    /// [`SecurityProfile::seccomp`]
    Seccomp,
    /// [`SecurityProfile::capabilities`]
    Capabilities,
    /// [`SecurityProfile::no_new_privileges`]
    NoNewPrivileges,
    /// [`SecurityProfile::read_only_rootfs`]
    ReadOnlyRootfs,
    /// [`SecurityProfile::user_namespace`]
    UserNamespace,
    /// [`SecurityProfile::masked_paths`]
    MaskedPaths,
    /// [`SecurityProfile::readonly_paths`]
    ReadonlyPaths,
}

impl ProfileField {
    /// The configuration key of the field.
    pub fn key(self) -> &'static str {
        match self {
            ProfileField::Seccomp => "seccomp",
            ProfileField::Capabilities => "capabilities",
            ProfileField::NoNewPrivileges => "noNewPrivileges",
            ProfileField::ReadOnlyRootfs => "readOnlyRootfs",
            ProfileField::UserNamespace => "userNamespace",
            ProfileField::MaskedPaths => "maskedPaths",
            ProfileField::ReadonlyPaths => "readonlyPaths",
        }
    }
}

impl SecurityProfile {
    /// The `hardened` shorthand: seccomp enforced, no capabilities, no new
    /// privileges, a read-only root and the extra masked paths. It leaves
    /// the user namespace to its own switch, because that one depends on
    /// how the host lays out the root filesystem.
    pub fn hardened() -> Self {
        SecurityProfile {
            seccomp: SeccompMode::Enforce,
            capabilities: CapabilitySet::Minimal,
            no_new_privileges: true,
            read_only_rootfs: true,
            user_namespace: false,
            masked_paths: HARDENED_MASKED_PATHS
                .iter()
                .map(|p| p.to_string())
                .collect(),
            readonly_paths: Vec::new(),
        }
    }

    /// Field by field the stricter of `self` and `other`: what a container
    /// gets when `other` is what its stub asked for. Paths are the union.
    pub fn tightened_by(&self, other: &SecurityProfile) -> SecurityProfile {
        let union = |a: &[String], b: &[String]| {
            let mut all = a.to_vec();
            all.extend(b.iter().filter(|p| !a.contains(p)).cloned());
            all
        };
        SecurityProfile {
            seccomp: self.seccomp.max(other.seccomp),
            capabilities: self.capabilities.max(other.capabilities),
            no_new_privileges: self.no_new_privileges || other.no_new_privileges,
            read_only_rootfs: self.read_only_rootfs || other.read_only_rootfs,
            user_namespace: self.user_namespace || other.user_namespace,
            masked_paths: union(&self.masked_paths, &other.masked_paths),
            readonly_paths: union(&self.readonly_paths, &other.readonly_paths),
        }
    }

    /// The fields where `self` is looser than `other`, in field order.
    pub fn looser_than(&self, other: &SecurityProfile) -> Vec<ProfileField> {
        let missing = |a: &[String], b: &[String]| b.iter().any(|p| !a.contains(p));
        [
            (self.seccomp < other.seccomp, ProfileField::Seccomp),
            (
                self.capabilities < other.capabilities,
                ProfileField::Capabilities,
            ),
            (
                !self.no_new_privileges && other.no_new_privileges,
                ProfileField::NoNewPrivileges,
            ),
            (
                !self.read_only_rootfs && other.read_only_rootfs,
                ProfileField::ReadOnlyRootfs,
            ),
            (
                !self.user_namespace && other.user_namespace,
                ProfileField::UserNamespace,
            ),
            (
                missing(&self.masked_paths, &other.masked_paths),
                ProfileField::MaskedPaths,
            ),
            (
                missing(&self.readonly_paths, &other.readonly_paths),
                ProfileField::ReadonlyPaths,
            ),
        ]
        .into_iter()
        .filter_map(|(looser, field)| looser.then_some(field))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_profile_is_todays_baseline() {
        let p = SecurityProfile::default();
        assert_eq!(p.seccomp, SeccompMode::Default);
        assert_eq!(p.capabilities, CapabilitySet::Default);
        assert!(p.no_new_privileges);
        assert!(!p.read_only_rootfs && !p.user_namespace);
        assert!(p.masked_paths.is_empty() && p.readonly_paths.is_empty());
    }

    #[test]
    fn tightening_takes_the_stricter_value_of_each_field() {
        let mut pool = SecurityProfile::hardened();
        pool.user_namespace = true;
        pool.no_new_privileges = false;
        let stub = SecurityProfile {
            readonly_paths: vec!["/proc/x".into()],
            ..SecurityProfile::default()
        };
        let got = pool.tightened_by(&stub);
        assert_eq!(
            got.seccomp,
            SeccompMode::Enforce,
            "the pool's enforce stays"
        );
        assert!(got.no_new_privileges, "the stub's stricter value wins");
        assert!(got.user_namespace && got.read_only_rootfs);
        assert_eq!(got.readonly_paths, ["/proc/x"]);
        assert_eq!(got.masked_paths.len(), HARDENED_MASKED_PATHS.len());
    }

    #[test]
    fn looser_fields_are_named() {
        let hardened = SecurityProfile::hardened();
        let fields = SecurityProfile::default().looser_than(&hardened);
        assert_eq!(
            fields,
            [
                ProfileField::Seccomp,
                ProfileField::Capabilities,
                ProfileField::ReadOnlyRootfs,
                ProfileField::MaskedPaths
            ]
        );
        assert!(hardened.looser_than(&SecurityProfile::default()).is_empty());
        assert_eq!(ProfileField::ReadOnlyRootfs.key(), "readOnlyRootfs");
    }
}
