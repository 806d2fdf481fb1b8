//! Generation of the OCI runtime `config.json` from a [`ContainerSpec`].
//!
//! The result is close to what `runc spec` writes (same mounts, masked and
//! read-only paths, the three default capabilities, `noNewPrivileges`), plus
//! our limits, our cgroup path, and the container's [`SecurityProfile`](crate::SecurityProfile)
//! (seccomp, capabilities, read-only root, user namespace, extra paths).

use std::path::Path;

use oci_spec::runtime::{
    get_default_maskedpaths, get_default_readonly_paths, LinuxBuilder, LinuxCapabilities,
    LinuxCapabilitiesBuilder, LinuxCpuBuilder, LinuxDevice, LinuxDeviceBuilder, LinuxDeviceCgroup,
    LinuxDeviceCgroupBuilder, LinuxDeviceType, LinuxIdMappingBuilder, LinuxMemoryBuilder,
    LinuxNamespace, LinuxNamespaceBuilder, LinuxNamespaceType, LinuxPidsBuilder,
    LinuxResourcesBuilder, Mount, MountBuilder, PosixRlimitBuilder, PosixRlimitType,
    ProcessBuilder, RootBuilder, Spec, SpecBuilder, UserBuilder,
};

use crate::error::RuntimeError;
use crate::security::{CapabilitySet, USER_NAMESPACE_HOST_ID, USER_NAMESPACE_SIZE};
use crate::{Capabilities, ContainerSpec, Network};

/// CFS period: 100 ms, the kernel's default.
const CPU_PERIOD_US: u64 = 100_000;
/// Shares per full core (the kernel's default weight is 1024).
const SHARES_PER_CORE: u64 = 1024;
/// `PATH` given to processes whose spec has none.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Open files per process, as `runc spec`.
const NOFILE: u64 = 1024;
const MIB: u64 = 1 << 20;

/// Rejects specs the runtimes would fail on late or obscurely.
pub(crate) fn validate(spec: &ContainerSpec) -> Result<(), RuntimeError> {
    let bad = |m: String| Err(RuntimeError::InvalidSpec(m));
    if spec.args.is_empty() {
        return bad("args is empty".into());
    }
    if !spec.cwd.starts_with('/') {
        return bad(format!("cwd {:?} is not absolute", spec.cwd));
    }
    if spec.hostname.is_empty() || spec.hostname.len() > 64 {
        return bad(format!("hostname {:?}: 1-64 characters", spec.hostname));
    }
    let r = &spec.resources;
    // The kernel's minimum CFS quota is 1 ms, i.e. 10 millicores of 100 ms.
    if r.cpu_millicores < 10 || r.memory_mib < 4 || r.pids < 1 {
        return bad(format!(
            "resources {r:?}: need >= 10 millicores, >= 4 MiB, >= 1 pid"
        ));
    }
    if let Some((key, _)) = spec
        .env
        .iter()
        .find(|(k, _)| k.is_empty() || k.contains('='))
    {
        return bad(format!("env name {key:?}"));
    }
    if let Some(m) = spec.mounts.iter().find(|m| !m.destination.starts_with('/')) {
        return bad(format!(
            "mount destination {:?} is not absolute",
            m.destination
        ));
    }
    Ok(())
}

fn mount(dest: &str, typ: &str, source: &str, options: &[&str]) -> Result<Mount, RuntimeError> {
    Ok(MountBuilder::default()
        .destination(dest)
        .typ(typ)
        .source(source)
        .options(options.iter().map(|o| o.to_string()).collect::<Vec<_>>())
        .build()?)
}

/// The mounts of `runc spec` (/proc, a tmpfs /dev the runtime fills with
/// null, zero, full, random, urandom, tty; /dev/pts, /dev/shm, /dev/mqueue,
/// read-only /sys and cgroupfs), then an optional tmpfs /tmp, then the
/// caller's bind mounts.
fn mounts(spec: &ContainerSpec) -> Result<Vec<Mount>, RuntimeError> {
    // /dev/shm is as large as the memory limit: its pages are charged to the
    // memory cgroup anyway, so a smaller fixed size would only be a second,
    // surprising limit.
    let shm = format!("size={}m", spec.resources.memory_mib);
    let mut mounts = vec![
        mount("/proc", "proc", "proc", &[])?,
        mount(
            "/dev",
            "tmpfs",
            "tmpfs",
            &["nosuid", "strictatime", "mode=755", "size=65536k"],
        )?,
        mount(
            "/dev/pts",
            "devpts",
            "devpts",
            &[
                "nosuid",
                "noexec",
                "newinstance",
                "ptmxmode=0666",
                "mode=0620",
                "gid=5",
            ],
        )?,
        mount(
            "/dev/shm",
            "tmpfs",
            "shm",
            &["nosuid", "noexec", "nodev", "mode=1777", &shm],
        )?,
        mount(
            "/dev/mqueue",
            "mqueue",
            "mqueue",
            &["nosuid", "noexec", "nodev"],
        )?,
        mount(
            "/sys",
            "sysfs",
            "sysfs",
            &["nosuid", "noexec", "nodev", "ro"],
        )?,
        mount(
            "/sys/fs/cgroup",
            "cgroup",
            "cgroup",
            &["nosuid", "noexec", "nodev", "relatime", "ro"],
        )?,
    ];
    // A read-only root still needs somewhere to write temporary files;
    // like /dev/shm, it may be as large as the memory limit it is charged to.
    let tmp_mib = spec.tmp_mib.or(spec
        .security
        .read_only_rootfs
        .then_some(spec.resources.memory_mib));
    if let Some(mib) = tmp_mib {
        let size = format!("size={mib}m");
        mounts.push(mount(
            "/tmp",
            "tmpfs",
            "tmpfs",
            &["nosuid", "nodev", "mode=1777", &size],
        )?);
    }
    for m in &spec.mounts {
        let mut options = vec!["rbind", "nosuid", "nodev"];
        if m.read_only {
            options.push("ro");
        }
        mounts.push(
            MountBuilder::default()
                .destination(m.destination.as_str())
                .typ("bind")
                .source(m.source.clone())
                .options(options.iter().map(|o| o.to_string()).collect::<Vec<_>>())
                .build()?,
        );
    }
    Ok(mounts)
}

fn namespaces(
    network: &Network,
    user_namespace: bool,
) -> Result<Vec<LinuxNamespace>, RuntimeError> {
    let mut out = Vec::new();
    if user_namespace {
        out.push(
            LinuxNamespaceBuilder::default()
                .typ(LinuxNamespaceType::User)
                .build()?,
        );
    }
    for typ in [
        LinuxNamespaceType::Pid,
        LinuxNamespaceType::Ipc,
        LinuxNamespaceType::Uts,
        LinuxNamespaceType::Mount,
        LinuxNamespaceType::Cgroup,
    ] {
        out.push(LinuxNamespaceBuilder::default().typ(typ).build()?);
    }
    let net = LinuxNamespaceBuilder::default().typ(LinuxNamespaceType::Network);
    out.push(match network {
        Network::None => net.build()?,
        Network::Path(path) => net.path(path.clone()).build()?,
    });
    Ok(out)
}

/// The capability sets of `set`, in every set the kernel keeps (ambient
/// stays empty, as `runc spec`).
fn capabilities(set: CapabilitySet) -> Result<LinuxCapabilities, RuntimeError> {
    Ok(match set {
        // CAP_AUDIT_WRITE, CAP_KILL, CAP_NET_BIND_SERVICE, as `runc spec`.
        CapabilitySet::Default => LinuxCapabilities::default(),
        CapabilitySet::Minimal => {
            let none = || std::collections::HashSet::<oci_spec::runtime::Capability>::new();
            LinuxCapabilitiesBuilder::default()
                .bounding(none())
                .effective(none())
                .inheritable(none())
                .permitted(none())
                .ambient(none())
                .build()?
        }
    })
}

/// runc's default paths plus the profile's, which only a host kernel gets.
fn extra_paths(defaults: Vec<String>, extra: &[String], host_kernel: bool) -> Vec<String> {
    let mut paths = defaults;
    if host_kernel {
        paths.extend(
            extra
                .iter()
                .filter(|p| !paths.contains(p))
                .cloned()
                .collect::<Vec<_>>(),
        );
    }
    paths
}

/// Builds the OCI spec. `rootfs` must already be canonical; `caps` supplies
/// the runtime's overheads, added to the memory and pids limits because the
/// runtime's own processes live in the container's cgroup.
/// The spec's extra device nodes and the cgroup rules that allow them.
fn devices(
    spec: &ContainerSpec,
) -> Result<(Vec<LinuxDevice>, Vec<LinuxDeviceCgroup>), RuntimeError> {
    let mut nodes = Vec::new();
    let mut allowed = Vec::new();
    for d in &spec.devices {
        let typ = match d.kind.as_str() {
            "b" => LinuxDeviceType::B,
            _ => LinuxDeviceType::C,
        };
        nodes.push(
            LinuxDeviceBuilder::default()
                .path(d.path.as_str())
                .typ(typ)
                .major(d.major)
                .minor(d.minor)
                .file_mode(d.file_mode)
                .build()?,
        );
        allowed.push(
            LinuxDeviceCgroupBuilder::default()
                .allow(true)
                .typ(typ)
                .major(d.major)
                .minor(d.minor)
                .access("rwm")
                .build()?,
        );
    }
    Ok((nodes, allowed))
}

pub(crate) fn build(
    spec: &ContainerSpec,
    rootfs: &Path,
    caps: &Capabilities,
    cgroups_path: &str,
) -> Result<Spec, RuntimeError> {
    let security = &spec.security;
    // gVisor's /proc and /sys are the Sentry's, and its sandbox is its own
    // kernel: the host-side protections below have nothing to protect there.
    let host_kernel = !caps.sandboxed;
    let mut env: Vec<String> = spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if !spec.env.iter().any(|(k, _)| k == "PATH") {
        env.push(format!("PATH={DEFAULT_PATH}"));
    }
    let process = ProcessBuilder::default()
        .terminal(false)
        .user(UserBuilder::default().uid(spec.uid).gid(spec.gid).build()?)
        .args(spec.args.clone())
        .env(env)
        .cwd(spec.cwd.as_str())
        .capabilities(capabilities(security.capabilities)?)
        .rlimits(vec![PosixRlimitBuilder::default()
            .typ(PosixRlimitType::RlimitNofile)
            .hard(NOFILE)
            .soft(NOFILE)
            .build()?])
        .no_new_privileges(security.no_new_privileges)
        .build()?;

    let (devices, allowed) = devices(spec)?;
    let r = &spec.resources;
    let memory = ((r.memory_mib + caps.memory_overhead_mib) * MIB) as i64;
    let resources = LinuxResourcesBuilder::default()
        // Deny all devices; the runtimes add the default ones (null, zero, ...).
        .devices(
            [LinuxDeviceCgroupBuilder::default()
                .allow(false)
                .access("rwm")
                .build()?]
            .into_iter()
            .chain(allowed)
            .collect::<Vec<_>>(),
        )
        // swap == limit: memory+swap may not exceed memory, i.e. no swap.
        .memory(
            LinuxMemoryBuilder::default()
                .limit(memory)
                .swap(memory)
                .build()?,
        )
        .cpu(
            LinuxCpuBuilder::default()
                .quota((r.cpu_millicores.max(r.cpu_limit_millicores) * CPU_PERIOD_US / 1000) as i64)
                .period(CPU_PERIOD_US)
                .shares((r.cpu_millicores * SHARES_PER_CORE / 1000).max(2))
                .build()?,
        )
        .pids(
            LinuxPidsBuilder::default()
                .limit((r.pids + caps.pids_overhead) as i64)
                .build()?,
        )
        .build()?;

    let user_namespace = security.user_namespace && host_kernel;
    let mut linux = LinuxBuilder::default()
        .namespaces(namespaces(&spec.network, user_namespace)?)
        .resources(resources)
        .cgroups_path(cgroups_path)
        .masked_paths(extra_paths(
            get_default_maskedpaths(),
            &security.masked_paths,
            host_kernel,
        ))
        .readonly_paths(extra_paths(
            get_default_readonly_paths(),
            &security.readonly_paths,
            host_kernel,
        ));
    if user_namespace {
        let map = || {
            LinuxIdMappingBuilder::default()
                .container_id(0u32)
                .host_id(USER_NAMESPACE_HOST_ID)
                .size(USER_NAMESPACE_SIZE)
                .build()
        };
        linux = linux.uid_mappings(vec![map()?]).gid_mappings(vec![map()?]);
    }
    if !devices.is_empty() {
        linux = linux.devices(devices);
    }
    if let Some(profile) = crate::seccomp::profile(security.seccomp, caps.sandboxed)? {
        linux = linux.seccomp(profile);
    }

    Ok(SpecBuilder::default()
        .version("1.0.2-dev")
        .process(process)
        .root(
            RootBuilder::default()
                .path(rootfs)
                .readonly(security.read_only_rootfs)
                .build()?,
        )
        .hostname(spec.hostname.as_str())
        .mounts(mounts(spec)?)
        .linux(linux.build()?)
        .build()?)
}

#[cfg(test)]
mod tests;
