//! `worker.volumeMountValidation`: mount targets that would shadow a
//! system path, or reach somewhere else through `..` or a symlink of the
//! image, are logged (`log`) or refused (`enforce`).

use std::path::Path;

use levers9_config::VolumeMountValidationMode;
use levers9_runtime::BindMount;

use super::violations::{Check, SecurityMetrics, Subject};

/// Directories a volume may not be mounted on or under: covering them
/// replaces the container's programs, libraries, configuration or kernel
/// interfaces. `/` is only refused itself (everything is under it).
const SYSTEM_PATHS: &[&str] = &[
    "/etc", "/proc", "/sys", "/dev", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
    "/libx32", "/boot", "/var/lib", "/run",
];

/// A mount refused under `enforce`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("volume mount target {target:?} refused: {what} (worker.volumeMountValidation is enforce)")]
pub struct MountRefused {
    /// The target as given.
    pub target: String,
    /// Why.
    pub what: String,
}

/// What is wrong with `target`, if anything. `rootfs` is the container's
/// root filesystem, where symlinks are looked for.
pub fn check_mount_target(target: &str, rootfs: &Path) -> Option<String> {
    if !target.starts_with('/') {
        return Some("is not an absolute path".into());
    }
    let parts: Vec<&str> = target
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        return Some("escapes through `..`".into());
    }
    if parts.is_empty() {
        return Some("shadows the whole root filesystem `/`".into());
    }
    let normal = format!("/{}", parts.join("/"));
    if let Some(system) = SYSTEM_PATHS
        .iter()
        .find(|s| normal == **s || normal.starts_with(&format!("{s}/")))
    {
        return Some(format!("shadows the system path {system}"));
    }
    let mut inside = rootfs.to_path_buf();
    for part in &parts {
        inside.push(part);
        match std::fs::symlink_metadata(&inside) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let shown = inside.strip_prefix(rootfs).unwrap_or(&inside);
                return Some(format!(
                    "goes through the image's symlink /{}",
                    shown.display()
                ));
            }
            Ok(_) => {}
            // Nothing further down exists yet: the runtime creates it.
            Err(_) => break,
        }
    }
    None
}

/// Checks every mount of `mounts` under `mode`: each problem is recorded;
/// under `enforce` the first one refuses the container.
pub fn validate_mounts(
    mounts: &[BindMount],
    rootfs: &Path,
    mode: VolumeMountValidationMode,
    subject: &Subject,
    metrics: &SecurityMetrics,
) -> Result<(), MountRefused> {
    let mode_name = match mode {
        VolumeMountValidationMode::Off => return Ok(()),
        VolumeMountValidationMode::Log => "log",
        VolumeMountValidationMode::Enforce => "enforce",
    };
    for mount in mounts {
        let Some(what) = check_mount_target(&mount.destination, rootfs) else {
            continue;
        };
        metrics.record(
            Check::VolumeMount,
            mode_name,
            subject,
            &format!("mount target {:?} {what}", mount.destination),
        );
        if mode == VolumeMountValidationMode::Enforce {
            return Err(MountRefused {
                target: mount.destination.clone(),
                what,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(target: &str) -> BindMount {
        BindMount {
            source: "/host/vol".into(),
            destination: target.into(),
            read_only: false,
        }
    }

    fn subject() -> Subject {
        Subject {
            container_id: Some(crate::fake_runtime::id("c1")),
            stub_id: "s1".into(),
            pool: "p".into(),
        }
    }

    #[test]
    fn system_paths_escapes_and_symlinks_are_found() {
        let rootfs = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(rootfs.path().join("data")).expect("mkdir");
        std::os::unix::fs::symlink("/etc", rootfs.path().join("cfg")).expect("symlink");
        let check = |t| check_mount_target(t, rootfs.path());
        assert_eq!(
            check("/etc").as_deref(),
            Some("shadows the system path /etc")
        );
        assert_eq!(
            check("/usr/lib/x").as_deref(),
            Some("shadows the system path /usr")
        );
        assert_eq!(
            check("/").as_deref(),
            Some("shadows the whole root filesystem `/`")
        );
        assert_eq!(check("../../x").as_deref(), Some("is not an absolute path"));
        assert_eq!(
            check("/data/../../x").as_deref(),
            Some("escapes through `..`")
        );
        assert_eq!(
            check("/cfg/app").as_deref(),
            Some("goes through the image's symlink /cfg")
        );
        for fine in [
            "/data",
            "/data/new/dir",
            "/mnt/models",
            "/levers9/run",
            "/etcetera",
        ] {
            assert_eq!(check(fine), None, "{fine}");
        }
    }

    #[test]
    fn enforce_refuses_etc_and_dot_dot_and_log_lets_them_through() {
        let rootfs = tempfile::tempdir().expect("tempdir");
        let metrics = SecurityMetrics::default();
        for target in ["/etc", "../../x"] {
            let refused = validate_mounts(
                &[mount("/data"), mount(target)],
                rootfs.path(),
                VolumeMountValidationMode::Enforce,
                &subject(),
                &metrics,
            )
            .expect_err("refused");
            assert_eq!(refused.target, target);
            assert!(refused
                .to_string()
                .contains("volumeMountValidation is enforce"));
        }
        assert_eq!(metrics.count(Check::VolumeMount, "enforce", "p"), 2);

        let log = crate::test_log::LogCapture::start();
        let passed = validate_mounts(
            &[mount("/etc"), mount("../../x")],
            rootfs.path(),
            VolumeMountValidationMode::Log,
            &subject(),
            &metrics,
        );
        assert_eq!(passed, Ok(()));
        assert_eq!(metrics.count(Check::VolumeMount, "log", "p"), 2);
        let lines = log.lines_with("check=\"volume_mount\"");
        assert_eq!(lines.len(), 2, "{}", log.text());
        assert!(
            lines[0].contains("mode=\"log\"") && lines[0].contains("shadows the system path /etc"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].contains("container_id=c1 stub_id=s1 pool=p"),
            "{}",
            lines[1]
        );

        let off = validate_mounts(
            &[mount("/etc")],
            rootfs.path(),
            VolumeMountValidationMode::Off,
            &subject(),
            &metrics,
        );
        assert_eq!(off, Ok(()));
        assert_eq!(
            metrics.count(Check::VolumeMount, "log", "p"),
            2,
            "off records nothing"
        );
    }
}
