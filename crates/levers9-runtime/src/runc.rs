//! runc: namespaces, cgroups and seccomp on the host kernel.

use crate::oci_cli::{ExecTty, Flavor};
use crate::oci_runtime::OciRuntime;
use crate::{Capabilities, ContainerSpec, RuntimeConfig};

/// What is particular to runc.
#[derive(Debug, Clone, Default)]
pub struct RuncFlavor;

/// Containers under runc: namespaces, cgroups and seccomp, on the host's
/// kernel (no kernel of their own, as under gVisor).
pub type Runc = OciRuntime<RuncFlavor>;

impl Runc {
    /// A runc runtime with state under `config.state_dir`.
    pub fn new(config: RuntimeConfig) -> Self {
        OciRuntime::with_flavor(config, RuncFlavor)
    }
}

impl Flavor for RuncFlavor {
    fn name(&self) -> &'static str {
        "runc"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: "runc",
            sandboxed: false,
            supports_seccomp: true,
            detects_oom: false,
            // runc's own processes leave the cgroup before the user's code
            // runs.
            memory_overhead_mib: 0,
            pids_overhead: 0,
            supports_netns_path: true,
        }
    }

    fn global_args(&self, _spec: Option<&ContainerSpec>) -> Vec<String> {
        Vec::new()
    }

    /// `--keep`: after the exit runc leaves the container (state and
    /// cgroups) for `delete`, so that the memory cgroup's OOM counter can be
    /// read first; without it runc removes the cgroups before we see the
    /// exit.
    fn run_args(&self) -> Vec<String> {
        vec!["--keep".into()]
    }

    /// runc makes a terminal in the container and copies between it and
    /// ours (see `terminal.rs`).
    fn exec_tty(&self) -> ExecTty {
        ExecTty::Flag("--tty")
    }

    fn owns_memory_cgroup(&self) -> bool {
        false
    }
}
