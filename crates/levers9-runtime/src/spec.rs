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

/// Whether `id` can name a container, a bundle directory and a cgroup.
pub(crate) fn valid_name(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && id.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Rejects specs the runtimes would fail on late or obscurely.
pub(crate) fn validate(spec: &ContainerSpec) -> Result<(), RuntimeError> {
    let bad = |m: String| Err(RuntimeError::InvalidSpec(m));
    if !valid_name(&spec.id) {
        return bad(format!(
            "id {:?}: use 1-64 of [A-Za-z0-9_.-], starting alphanumeric",
            spec.id
        ));
    }
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
mod tests {
    use super::*;
    use crate::{BindMount, Resources};

    fn caps(memory_overhead_mib: u64, pids_overhead: u64) -> Capabilities {
        Capabilities {
            name: "test",
            sandboxed: false,
            supports_seccomp: true,
            detects_oom: true,
            memory_overhead_mib,
            pids_overhead,
            supports_netns_path: true,
        }
    }

    #[test]
    fn device_nodes_are_created_and_allowed_by_the_cgroup() {
        let mut s = ContainerSpec::new("c1", "/r", vec!["true".into()]);
        s.devices.push(crate::DeviceNode {
            path: "/dev/nvidia0".into(),
            kind: "c".into(),
            major: 195,
            minor: 0,
            file_mode: 0o666,
        });
        let json = serde_json::to_value(
            build(&s, Path::new("/r"), &caps(0, 0), "/levers9-c1").expect("builds"),
        )
        .expect("json");
        let node = &json["linux"]["devices"][0];
        assert_eq!(node["path"], "/dev/nvidia0");
        assert_eq!(
            (
                node["type"].as_str(),
                node["major"].as_i64(),
                node["minor"].as_i64()
            ),
            (Some("c"), Some(195), Some(0))
        );
        let rules = json["linux"]["resources"]["devices"]
            .as_array()
            .expect("rules");
        assert_eq!(rules[0]["allow"], false, "everything else stays denied");
        assert_eq!(rules[1]["allow"], true);
        assert_eq!(
            (rules[1]["major"].as_i64(), rules[1]["minor"].as_i64()),
            (Some(195), Some(0))
        );

        let plain = ContainerSpec::new("c2", "/r", vec!["true".into()]);
        let json = serde_json::to_value(
            build(&plain, Path::new("/r"), &caps(0, 0), "/levers9-c2").expect("builds"),
        )
        .expect("json");
        assert!(json["linux"].get("devices").is_none());
    }

    #[test]
    fn limits_mounts_and_namespaces_are_generated() {
        let mut s = ContainerSpec::new("c1", "/r", vec!["true".into()]);
        s.resources = Resources {
            cpu_millicores: 500,
            cpu_limit_millicores: 0,
            memory_mib: 32,
            pids: 16,
        };
        s.mounts.push(BindMount {
            source: "/data".into(),
            destination: "/data".into(),
            read_only: true,
        });
        s.tmp_mib = Some(8);
        let json = serde_json::to_value(
            build(&s, Path::new("/r"), &caps(100, 10), "/levers9-c1").expect("builds"),
        )
        .expect("json");
        let res = &json["linux"]["resources"];
        assert_eq!(res["memory"]["limit"], 132 << 20);
        assert_eq!(res["memory"]["swap"], 132 << 20);
        assert_eq!(res["cpu"]["quota"], 50_000, "no limit above the guarantee");
        assert_eq!(res["cpu"]["period"], 100_000);
        assert_eq!(res["cpu"]["shares"], 512);
        assert_eq!(res["pids"]["limit"], 26);
        assert_eq!(json["linux"]["cgroupsPath"], "/levers9-c1");
        s.resources.cpu_limit_millicores = 1000;
        let burst = serde_json::to_value(
            build(&s, Path::new("/r"), &caps(100, 10), "/levers9-c1").expect("builds"),
        )
        .expect("json");
        let cpu = &burst["linux"]["resources"]["cpu"];
        assert_eq!(cpu["quota"], 100_000, "it may burst to the limit");
        assert_eq!(cpu["shares"], 512, "its weight stays its guarantee");
        assert_eq!(json["process"]["terminal"], false);
        assert!(json["process"]["env"][0]
            .as_str()
            .unwrap_or("")
            .starts_with("PATH="));
        let dests: Vec<&str> = json["mounts"]
            .as_array()
            .expect("mounts")
            .iter()
            .filter_map(|m| m["destination"].as_str())
            .collect();
        for d in [
            "/proc",
            "/dev",
            "/dev/shm",
            "/dev/pts",
            "/dev/mqueue",
            "/sys",
            "/tmp",
            "/data",
        ] {
            assert!(dests.contains(&d), "{d} mounted");
        }
        let types: Vec<&str> = json["linux"]["namespaces"]
            .as_array()
            .expect("namespaces")
            .iter()
            .filter_map(|n| n["type"].as_str())
            .collect();
        for t in ["pid", "network", "ipc", "uts", "mount"] {
            assert!(types.contains(&t), "{t} namespace");
        }
        assert_eq!(json["linux"]["seccomp"]["defaultAction"], "SCMP_ACT_ERRNO");
    }

    fn built(s: &ContainerSpec, sandboxed: bool) -> serde_json::Value {
        let mut caps = caps(0, 0);
        caps.sandboxed = sandboxed;
        serde_json::to_value(build(s, Path::new("/r"), &caps, "/c").expect("builds")).expect("json")
    }

    #[test]
    fn the_default_profile_builds_todays_spec() {
        let json = built(&ContainerSpec::new("c1", "/r", vec!["true".into()]), false);
        let mut bounding: Vec<&str> = json["process"]["capabilities"]["bounding"]
            .as_array()
            .expect("bounding set")
            .iter()
            .filter_map(|c| c.as_str())
            .collect();
        bounding.sort_unstable();
        assert_eq!(
            bounding,
            ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]
        );
        assert_eq!(json["process"]["noNewPrivileges"], true);
        assert_eq!(json["root"]["readonly"], false);
        assert!(json["linux"]["uidMappings"].is_null());
        assert_eq!(
            json["linux"]["maskedPaths"],
            serde_json::to_value(get_default_maskedpaths()).expect("json")
        );
    }

    #[test]
    fn the_hardened_profile_is_applied_and_gvisor_gets_what_it_honours() {
        let mut s = ContainerSpec::new("c1", "/r", vec!["true".into()]);
        s.security = crate::SecurityProfile::hardened();
        s.security.user_namespace = true;
        let json = built(&s, false);
        assert_eq!(
            json["process"]["capabilities"]["bounding"],
            serde_json::json!([])
        );
        assert_eq!(json["root"]["readonly"], true);
        assert_eq!(
            json["linux"]["uidMappings"][0]["hostID"],
            USER_NAMESPACE_HOST_ID
        );
        assert_eq!(json["linux"]["gidMappings"][0]["containerID"], 0);
        assert!(json["linux"]["namespaces"]
            .as_array()
            .expect("namespaces")
            .iter()
            .any(|n| n["type"] == "user"));
        let tmp = json["mounts"]
            .as_array()
            .expect("mounts")
            .iter()
            .find(|m| m["destination"] == "/tmp")
            .expect("a read-only root gets a /tmp");
        assert_eq!(tmp["type"], "tmpfs");
        let masked = json["linux"]["maskedPaths"].to_string();
        assert!(masked.contains("/proc/kallsyms"), "{masked}");

        let gvisor = built(&s, true);
        assert_eq!(gvisor["root"]["readonly"], true);
        assert_eq!(
            gvisor["process"]["capabilities"]["bounding"],
            serde_json::json!([])
        );
        assert!(
            gvisor["linux"]["uidMappings"].is_null(),
            "no user namespace"
        );
        assert!(!gvisor["linux"]["maskedPaths"]
            .to_string()
            .contains("kallsyms"));
    }

    #[test]
    fn bad_specs_are_rejected() {
        let ok = ContainerSpec::new("c1", "/r", vec!["true".into()]);
        assert!(validate(&ok).is_ok());
        for id in ["", "../x", "a/b", "-x", &"x".repeat(65)] {
            let s = ContainerSpec {
                id: id.into(),
                ..ok.clone()
            };
            assert!(validate(&s).is_err(), "{id:?} rejected");
        }
        let s = ContainerSpec {
            args: vec![],
            ..ok.clone()
        };
        assert!(validate(&s).is_err());
        let s = ContainerSpec {
            cwd: "tmp".into(),
            ..ok
        };
        assert!(validate(&s).is_err());
    }
}
