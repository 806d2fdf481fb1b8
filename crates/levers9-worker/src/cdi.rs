//! GPUs through the Container Device Interface: a container's GPUs, by
//! their CDI names (`nvidia.com/gpu=<index>`), are turned into the device
//! nodes, environment and mounts that the CDI spec files on this machine
//! (`nvidia-ctk cdi generate`, in `/etc/cdi` or `/var/run/cdi`) list for
//! them. runc knows nothing of CDI, so the worker applies these edits to
//! the container spec itself, as containerd and CRI-O do.
//!
//! Without a spec for `nvidia.com/gpu` nothing is injected and the
//! container gets only `NVIDIA_VISIBLE_DEVICES`, for a host whose runtime
//! hook (nvidia-container-runtime) does the rest.

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use levers9_runtime::{BindMount, ContainerSpec, DeviceNode};
use serde::Deserialize;

/// The CDI kind of NVIDIA GPUs.
pub const NVIDIA_GPU_KIND: &str = "nvidia.com/gpu";

/// Why a container's CDI devices cannot be resolved.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CdiError {
    /// A spec file cannot be read or parsed.
    #[error("CDI spec {path}: {message}")]
    Spec {
        /// The spec file (`.json`, `.yaml` or `.yml` in a CDI spec directory).
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The spec has no such device.
    #[error(
        "the CDI spec {path} for {kind} has no device {name:?} (it has: {known}): regenerate it \
         with `nvidia-ctk cdi generate --output={path}` or fix the worker's --gpu ids"
    )]
    UnknownDevice {
        /// The spec file consulted: the last one for `kind`, later directories
        /// winning.
        path: PathBuf,
        /// The CDI kind, e.g. [`NVIDIA_GPU_KIND`].
        kind: String,
        /// The device asked for.
        name: String,
        /// The devices it has.
        known: String,
    },
    /// A device node cannot be examined on the host.
    #[error("CDI device node {path}: {message}")]
    DeviceNode {
        /// The node's path on the host: the spec's `hostPath`, or its `path`
        /// when it has none.
        path: String,
        /// Why.
        message: String,
    },
}

/// One CDI spec file (the fields the worker applies).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    kind: String,
    #[serde(default)]
    devices: Vec<Device>,
    #[serde(default)]
    container_edits: Edits,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Device {
    name: String,
    #[serde(default)]
    container_edits: Edits,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Edits {
    #[serde(default)]
    env: Vec<String>,
    #[serde(default)]
    device_nodes: Vec<Node>,
    #[serde(default)]
    mounts: Vec<SpecMount>,
    #[serde(default)]
    hooks: Vec<serde_yaml::Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Node {
    path: String,
    host_path: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    major: Option<i64>,
    minor: Option<i64>,
    file_mode: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecMount {
    host_path: String,
    container_path: String,
    #[serde(default)]
    options: Vec<String>,
}

/// What the container gets for its CDI devices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerEdits {
    /// `KEY=VALUE` pairs.
    pub env: Vec<(String, String)>,
    /// Device nodes to create, with their cgroup permission.
    pub devices: Vec<DeviceNode>,
    /// Bind mounts (driver libraries and binaries).
    pub mounts: Vec<BindMount>,
    /// Hooks the spec lists, which are not run (see the module docs).
    pub skipped_hooks: usize,
}

/// The CDI names of GPUs given by index: `nvidia.com/gpu=0`, ….
pub fn gpu_names(device_ids: &[String]) -> Vec<String> {
    device_ids
        .iter()
        .map(|id| format!("{NVIDIA_GPU_KIND}={id}"))
        .collect()
}

/// Gives `spec` what this machine's CDI spec lists for the GPUs
/// `device_ids`; nothing where it has no spec for `nvidia.com/gpu`.
pub fn inject(
    spec: &mut ContainerSpec,
    dirs: &[PathBuf],
    device_ids: &[String],
) -> Result<(), CdiError> {
    let Some(edits) = resolve(dirs, &gpu_names(device_ids))? else {
        return Ok(());
    };
    if edits.skipped_hooks > 0 {
        tracing::warn!(
            container_id = %spec.id,
            hooks = edits.skipped_hooks,
            "the CDI spec lists hooks, which levers9 does not run: devices, environment and mounts are applied"
        );
    }
    for (key, value) in edits.env {
        spec.env.retain(|(k, _)| *k != key);
        spec.env.push((key, value));
    }
    spec.devices.extend(edits.devices);
    spec.mounts.extend(edits.mounts);
    Ok(())
}

/// The spec files for `kind` in `dirs` (later directories win, as in the
/// CDI specification, where /var/run/cdi overrides /etc/cdi). Missing
/// directories are skipped.
fn find_spec(dirs: &[PathBuf], kind: &str) -> Result<Option<(PathBuf, Spec)>, CdiError> {
    let mut found = None;
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("json" | "yaml" | "yml")
                )
            })
            .collect();
        files.sort();
        for path in files {
            let fail = |message: String| CdiError::Spec {
                path: path.clone(),
                message,
            };
            let text = std::fs::read_to_string(&path).map_err(|e| fail(e.to_string()))?;
            // YAML is a superset of JSON: one parser reads both forms.
            let spec: Spec = serde_yaml::from_str(&text).map_err(|e| fail(e.to_string()))?;
            if spec.kind == kind {
                found = Some((path, spec));
            }
        }
    }
    Ok(found)
}

/// The edits for the devices `names` (`kind=name`) from the specs in
/// `dirs`; None when no spec has their kind.
pub fn resolve(dirs: &[PathBuf], names: &[String]) -> Result<Option<ContainerEdits>, CdiError> {
    let mut by_kind: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for name in names {
        let (kind, device) = name.split_once('=').unwrap_or((NVIDIA_GPU_KIND, name));
        by_kind.entry(kind).or_default().push(device);
    }
    let mut edits = ContainerEdits::default();
    let mut any = false;
    for (kind, devices) in by_kind {
        let Some((path, spec)) = find_spec(dirs, kind)? else {
            continue;
        };
        any = true;
        apply(&mut edits, &spec.container_edits)?;
        for name in devices {
            let Some(device) = spec.devices.iter().find(|d| d.name == name) else {
                return Err(CdiError::UnknownDevice {
                    path,
                    kind: kind.to_owned(),
                    name: name.to_owned(),
                    known: spec
                        .devices
                        .iter()
                        .map(|d| d.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            };
            apply(&mut edits, &device.container_edits)?;
        }
    }
    Ok(any.then_some(edits))
}

fn apply(into: &mut ContainerEdits, edits: &Edits) -> Result<(), CdiError> {
    for kv in &edits.env {
        let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
        into.env.retain(|(k, _)| k != key);
        into.env.push((key.to_owned(), value.to_owned()));
    }
    for node in &edits.device_nodes {
        let device = device_node(node)?;
        if !into.devices.iter().any(|d| d.path == device.path) {
            into.devices.push(device);
        }
    }
    for m in &edits.mounts {
        if !into
            .mounts
            .iter()
            .any(|b| b.destination == m.container_path)
        {
            into.mounts.push(BindMount {
                source: PathBuf::from(&m.host_path),
                destination: m.container_path.clone(),
                read_only: m.options.iter().any(|o| o == "ro"),
            });
        }
    }
    into.skipped_hooks += edits.hooks.len();
    Ok(())
}

/// A device node, its type and numbers read from the host where the spec
/// leaves them out (as `nvidia-ctk` does).
fn device_node(node: &Node) -> Result<DeviceNode, CdiError> {
    let host = node.host_path.clone().unwrap_or_else(|| node.path.clone());
    let given = match (&node.kind, node.major, node.minor) {
        (Some(kind), Some(major), Some(minor)) => Some((kind.clone(), major, minor)),
        _ => None,
    };
    let (kind, major, minor, mode) = match given {
        Some((kind, major, minor)) => (kind, major, minor, node.file_mode.unwrap_or(0o666)),
        None => {
            let fail = |message: String| CdiError::DeviceNode {
                path: host.clone(),
                message,
            };
            let meta = std::fs::metadata(Path::new(&host))
                .map_err(|e| fail(format!("{e}: is the driver loaded?")))?;
            let kind = if meta.file_type().is_char_device() {
                "c"
            } else if meta.file_type().is_block_device() {
                "b"
            } else {
                return Err(fail("is not a device node".into()));
            };
            let (major, minor) = split_dev(meta.rdev());
            (
                kind.to_owned(),
                major,
                minor,
                node.file_mode.unwrap_or(meta.mode() & 0o777),
            )
        }
    };
    Ok(DeviceNode {
        path: node.path.clone(),
        kind,
        major,
        minor,
        file_mode: mode,
    })
}

/// Linux's `major()`/`minor()` of a `dev_t`.
fn split_dev(dev: u64) -> (i64, i64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as i64, minor as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `nvidia-ctk cdi generate` writes, cut down: per-device nodes,
    /// spec-wide edits, a hook. /dev/null stands in for the GPU nodes so the
    /// numbers read from the host are known.
    const NVIDIA_SPEC: &str = r#"{
      "cdiVersion": "0.5.0",
      "kind": "nvidia.com/gpu",
      "devices": [
        {"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0", "hostPath": "/dev/null"}]}},
        {"name": "1", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia1", "type": "c", "major": 195, "minor": 1}]}},
        {"name": "all", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0", "hostPath": "/dev/null"}]}}
      ],
      "containerEdits": {
        "env": ["NVIDIA_VISIBLE_DEVICES=void"],
        "deviceNodes": [{"path": "/dev/nvidiactl", "hostPath": "/dev/zero"}],
        "mounts": [{"hostPath": "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "containerPath": "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "options": ["ro", "nosuid", "nodev", "bind"]}],
        "hooks": [{"hookName": "createContainer", "path": "/usr/bin/nvidia-ctk", "args": ["nvidia-ctk", "hook", "update-ldcache"]}]
      }
    }"#;

    fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn gpus_get_their_nodes_and_the_specs_shared_edits() {
        let dir = dir_with(&[("nvidia.json", NVIDIA_SPEC), ("notes.txt", "not a spec")]);
        let names = gpu_names(&["0".into(), "1".into()]);
        assert_eq!(names, ["nvidia.com/gpu=0", "nvidia.com/gpu=1"]);
        let edits = resolve(&[dir.path().to_owned()], &names).unwrap().unwrap();
        let nodes: Vec<(&str, &str, i64, i64)> = edits
            .devices
            .iter()
            .map(|d| (d.path.as_str(), d.kind.as_str(), d.major, d.minor))
            .collect();
        // /dev/null is char 1:3 and /dev/zero 1:5 on every Linux.
        assert_eq!(
            nodes,
            [
                ("/dev/nvidiactl", "c", 1, 5),
                ("/dev/nvidia0", "c", 1, 3),
                ("/dev/nvidia1", "c", 195, 1)
            ]
        );
        assert_eq!(
            edits.env,
            [("NVIDIA_VISIBLE_DEVICES".into(), "void".into())]
        );
        assert_eq!(edits.mounts.len(), 1);
        assert!(edits.mounts[0].read_only);
        assert_eq!(edits.skipped_hooks, 1);
    }

    #[test]
    fn yaml_specs_are_read_and_var_run_overrides_etc() {
        let etc = dir_with(&[("nvidia.json", NVIDIA_SPEC)]);
        let run = dir_with(&[(
            "nvidia.yaml",
            "cdiVersion: 0.6.0\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n      hostPath: /dev/zero\n",
        )]);
        let dirs = [etc.path().to_owned(), run.path().to_owned()];
        let edits = resolve(&dirs, &gpu_names(&["0".into()])).unwrap().unwrap();
        assert_eq!(edits.devices.len(), 1);
        assert_eq!((edits.devices[0].major, edits.devices[0].minor), (1, 5));
        assert!(edits.env.is_empty(), "only the winning spec applies");
    }

    #[test]
    fn no_spec_means_no_edits_and_an_unknown_gpu_says_what_to_do() {
        let empty = tempfile::tempdir().unwrap();
        let missing = empty.path().join("absent");
        let names = gpu_names(&["0".into()]);
        assert_eq!(
            resolve(&[missing, empty.path().to_owned()], &names),
            Ok(None)
        );

        let dir = dir_with(&[("nvidia.json", NVIDIA_SPEC)]);
        let error = resolve(&[dir.path().to_owned()], &gpu_names(&["7".into()])).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("no device \"7\"") && text.contains("0, 1, all"),
            "{text}"
        );
        assert!(text.contains("nvidia-ctk cdi generate"), "{text}");

        let broken = dir_with(&[("nvidia.json", "{")]);
        let error = resolve(&[broken.path().to_owned()], &names).unwrap_err();
        assert!(error.to_string().starts_with("CDI spec "), "{error}");
    }
}
