//! The systemd unit `levers9 agent --install-systemd` writes: it runs the
//! agent with its credential file, so no token is in the unit.

use std::fs;
use std::path::Path;

use anyhow::{Context as _, Result};

/// What the unit runs.
pub struct UnitSettings<'a> {
    /// The levers9 binary.
    pub exe: &'a Path,
    /// The saved worker credential.
    pub credential_file: &'a Path,
    /// The worker's state directory.
    pub state_dir: &'a Path,
    /// The controlplane's gRPC address.
    pub controlplane: &'a str,
    /// Whether it speaks TLS there.
    pub tls: bool,
}

/// A systemd value: quoted, with `\` and `"` escaped, `%` doubled.
fn quoted(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('%', "%%");
    format!("\"{escaped}\"")
}

/// The unit text.
pub fn unit(settings: &UnitSettings<'_>) -> String {
    let exe = quoted(&settings.exe.display().to_string());
    let credential = quoted(&settings.credential_file.display().to_string());
    let state = quoted(&settings.state_dir.display().to_string());
    let controlplane = quoted(&format!("LEVERS9_CONTROLPLANE={}", settings.controlplane));
    let tls = quoted(&format!("LEVERS9_CONTROLPLANE_TLS={}", settings.tls));
    format!(
        "[Unit]
Description=levers9 agent: this machine's worker
Documentation=https://github.com/levers9/levers9/blob/main/docs/machines.md
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
Environment={controlplane}
Environment={tls}
ExecStart={exe} agent --credential-file {credential} --state-dir {state}
# On SIGTERM the worker drains: containers get the drain grace to finish.
KillMode=mixed
TimeoutStopSec=60
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
"
    )
}

/// Writes the unit (mode 0644: it holds no secret).
pub fn install(path: &Path, unit: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    fs::write(path, unit).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_runs_the_agent_with_its_credential_file_and_no_token() {
        let text = unit(&UnitSettings {
            exe: Path::new("/var/lib/levers9/agent/levers9"),
            credential_file: Path::new("/var/lib/levers9/agent/credential"),
            state_dir: Path::new("/var/lib/levers9/agent/worker"),
            controlplane: "cp.example.com:1993",
            tls: true,
        });
        assert!(
            text.contains(
                "ExecStart=\"/var/lib/levers9/agent/levers9\" agent --credential-file \
             \"/var/lib/levers9/agent/credential\" --state-dir \"/var/lib/levers9/agent/worker\"\n"
            ),
            "{text}"
        );
        assert!(text.contains("Environment=\"LEVERS9_CONTROLPLANE=cp.example.com:1993\"\n"));
        assert!(text.contains("Environment=\"LEVERS9_CONTROLPLANE_TLS=true\"\n"));
        assert!(text.contains("Restart=always\n"));
        assert!(text.contains("WantedBy=multi-user.target\n"));
        assert!(!text.contains("l9_") && !text.contains("TOKEN"), "{text}");
        // Every line is a section, a key=value or a comment.
        for line in text.lines().filter(|l| !l.is_empty()) {
            assert!(
                line.starts_with('[') || line.starts_with('#') || line.contains('='),
                "{line}"
            );
        }
        assert_eq!(quoted("50%\"x"), "\"50%%\\\"x\"");
    }
}
