//! runsc (gVisor): the user's code runs against gVisor's user-space kernel
//! (the Sentry), which with a file proxy (the gofer) lives in the
//! container's cgroups.
//!
//! Flags for the machines we run on (MACHINE-NOTES §1): the ptrace platform
//! (the Debian build has no systrap, and KVM hangs), `--rootless=false`, and
//! `--network=none` (the sandbox network stack refuses to start on these
//! kernels) or `--network=host` inside a given network namespace.
//! OCI seccomp profiles are ignored by runsc unless `--oci-seccomp` is
//! given, which we pass only when the spec asks for a profile.
//! `--host-uds=open` lets a process connect to a host Unix socket
//! bind-mounted into the sandbox (the worker's container server); without
//! it gVisor refuses the connect. It allows no socket creation on the host.

use crate::oci_cli::{ExecTty, Flavor};
use crate::oci_runtime::OciRuntime;
use crate::{Capabilities, ContainerSpec, Network, RuntimeConfig, SeccompMode};

/// The gVisor platform used by default.
pub const RUNSC_PLATFORM: &str = "ptrace";

/// MiB added to the memory limit: the Sentry and gofer are charged to the
/// container's memory cgroup and the whole sandbox is OOM-killed at the
/// limit. An idle sandbox uses ~15 MiB; MACHINE-NOTES budgets 64–128 MiB
/// under load (a 64 MB tmpfs write needed a 160 MiB limit for a 32 MiB
/// workload).
pub const RUNSC_MEMORY_OVERHEAD_MIB: u64 = 128;

/// Pids added to the pids limit: the Sentry's and gofer's threads count
/// (an idle sandbox has ~25; with a limit of 16 the sandbox cannot start),
/// and on the ptrace platform each process of the user's code also has host
/// stub processes and tracing threads.
pub const RUNSC_PIDS_OVERHEAD: u64 = 256;

/// What is particular to runsc.
#[derive(Debug, Clone)]
pub struct RunscFlavor {
    /// gVisor platform (`--platform`).
    pub platform: String,
}

impl Default for RunscFlavor {
    fn default() -> Self {
        RunscFlavor {
            platform: RUNSC_PLATFORM.into(),
        }
    }
}

/// Containers under runsc (gVisor): the user's code runs against a user-space
/// kernel, on the ptrace platform unless [`RunscFlavor::platform`] says
/// otherwise.
pub type Runsc = OciRuntime<RunscFlavor>;

impl Runsc {
    /// A runsc runtime on the default platform with state under
    /// `config.state_dir`.
    pub fn new(config: RuntimeConfig) -> Self {
        OciRuntime::with_flavor(config, RunscFlavor::default())
    }
}

impl Flavor for RunscFlavor {
    fn name(&self) -> &'static str {
        "runsc"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: "runsc",
            sandboxed: true,
            supports_seccomp: true,
            detects_oom: false,
            memory_overhead_mib: RUNSC_MEMORY_OVERHEAD_MIB,
            pids_overhead: RUNSC_PIDS_OVERHEAD,
            supports_netns_path: true,
        }
    }

    fn global_args(&self, spec: Option<&ContainerSpec>) -> Vec<String> {
        let mut args = vec![
            format!("--platform={}", self.platform),
            "--rootless=false".into(),
            "--host-uds=open".into(),
        ];
        if let Some(spec) = spec {
            args.push(match spec.network {
                Network::None => "--network=none".into(),
                Network::Path(_) => "--network=host".into(),
            });
            if spec.security.seccomp != SeccompMode::Off {
                args.push("--oci-seccomp".into());
            }
        }
        args
    }

    fn run_args(&self) -> Vec<String> {
        Vec::new()
    }

    /// runsc (of 2022 at least) has no `--tty`: a process file saying
    /// `"terminal": true` makes the terminal on its stdin the command's.
    fn exec_tty(&self) -> ExecTty {
        ExecTty::ProcessFile
    }

    /// runsc removes the cgroups it created when the sandbox ends, before we
    /// could read the OOM counter, but leaves a pre-existing one alone (and
    /// does not configure it): so we create the memory cgroup with its
    /// limit ourselves.
    fn owns_memory_cgroup(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ContainerId;

    #[test]
    fn flags_follow_the_spec() {
        let f = RunscFlavor::default();
        assert_eq!(
            f.global_args(None),
            ["--platform=ptrace", "--rootless=false", "--host-uds=open"]
        );
        let mut spec =
            ContainerSpec::new(ContainerId::parse("c").unwrap(), "/r", vec!["true".into()]);
        let run = f.global_args(Some(&spec));
        assert!(run.contains(&"--network=none".to_string()));
        assert!(run.contains(&"--oci-seccomp".to_string()));
        spec.security.seccomp = SeccompMode::Off;
        spec.network = Network::Path("/var/run/netns/x".into());
        let run = f.global_args(Some(&spec));
        assert!(run.contains(&"--network=host".to_string()));
        assert!(!run.contains(&"--oci-seccomp".to_string()));
    }
}
