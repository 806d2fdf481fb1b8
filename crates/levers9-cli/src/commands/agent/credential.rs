//! The machine's worker credential, kept in a private file once joined.

use std::fmt;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

/// What the join answered with.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    /// The machine, and its worker's id.
    pub machine_id: String,
    /// Its pool.
    pub pool: String,
    /// runc or gvisor.
    pub runtime: String,
    /// The worker token; may only act as this machine's worker.
    pub token: String,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("machine_id", &self.machine_id)
            .field("pool", &self.pool)
            .field("runtime", &self.runtime)
            .field("token", &"<redacted>")
            .finish()
    }
}

impl Credential {
    /// The saved credential; None before the first join.
    pub fn read(path: &Path) -> Result<Option<Credential>> {
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let credential = toml::from_str(&text).with_context(|| {
            format!(
                "{} is not an agent credential: delete it and join again with a new join \
                 command (levers9 machine create --pool NAME)",
                path.display()
            )
        })?;
        Ok(Some(credential))
    }

    /// Writes it with mode 0600 in a directory only its owner can enter.
    pub fn write(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .with_context(|| format!("cannot make {} private", dir.display()))?;
        }
        let text = toml::to_string(self).context("cannot encode the credential")?;
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_credential_round_trips_privately_and_never_shows_its_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent/credential");
        let credential = Credential {
            machine_id: "m1".into(),
            pool: "gpu".into(),
            runtime: "runc".into(),
            token: "l9_secret".into(),
        };
        assert_eq!(Credential::read(&path).unwrap(), None);
        credential.write(&path).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(Credential::read(&path).unwrap(), Some(credential.clone()));
        assert!(!format!("{credential:?}").contains("l9_secret"));
    }
}
