//! The CLI's own config: named contexts in `~/.levers9/config.toml`, readable
//! by the user only (file 0600, directory 0700) since it holds tokens.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use serde::{Deserialize, Serialize};

/// The default gRPC port of a controlplane.
pub const DEFAULT_PORT: u16 = 1993;

/// One controlplane the CLI can talk to.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Context {
    /// Host name or address.
    pub host: String,
    /// gRPC port.
    pub port: u16,
    /// Use TLS even on a port other than 443.
    #[serde(default)]
    pub tls: bool,
    /// A PEM file of CA certificates to trust besides the system's, for a
    /// controlplane whose certificate a private CA signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// The token; empty when none is saved.
    #[serde(default)]
    pub token: String,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("ca_file", &self.ca_file)
            .field("token", &"<hidden>")
            .finish()
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CliConfig {
    /// The context commands use unless told otherwise.
    #[serde(default)]
    pub current: String,
    /// Every context by name.
    #[serde(default)]
    pub contexts: BTreeMap<String, Context>,
}

/// `~/.levers9`.
pub fn levers9_dir() -> Result<PathBuf> {
    let home = std::env::var_os("HOME")
        .context("HOME is not set, so the CLI config (~/.levers9/config.toml) cannot be found")?;
    Ok(PathBuf::from(home).join(".levers9"))
}

/// `~/.levers9/config.toml`.
pub fn config_path() -> Result<PathBuf> {
    Ok(levers9_dir()?.join("config.toml"))
}

impl CliConfig {
    /// The file, or None on a machine that has none yet.
    pub fn load() -> Result<Option<CliConfig>> {
        let path = config_path()?;
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let config = toml::from_str(&text).with_context(|| {
            format!(
                "{} is not a valid CLI config: fix it or delete it and run any command again",
                path.display()
            )
        })?;
        Ok(Some(config))
    }

    /// Writes the file atomically with mode 0600 in a 0700 directory.
    pub fn save(&self) -> Result<PathBuf> {
        let dir = levers9_dir()?;
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make {} private", dir.display()))?;
        let path = config_path()?;
        let staging = dir.join(".config.toml.tmp");
        let text = toml::to_string_pretty(self).context("cannot encode the CLI config")?;
        let _ = fs::remove_file(&staging);
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&staging)
            .with_context(|| format!("cannot write {}", staging.display()))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&staging, &path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }

    /// The context called `name`.
    pub fn get(&self, name: &str) -> Result<&Context> {
        self.contexts.get(name).with_context(|| {
            format!("no context named {name:?}: see levers9 config list, or levers9 config create {name}")
        })
    }

    /// Makes `name` the current context.
    pub fn select(&mut self, name: &str) -> Result<()> {
        if !self.contexts.contains_key(name) {
            bail!("no context named {name:?}: see levers9 config list");
        }
        self.current = name.to_owned();
        Ok(())
    }
}

/// Parses `host`, `host:port` or `[v6]:port`.
pub fn parse_address(text: &str) -> Result<(String, u16)> {
    let text = text.trim();
    if text.is_empty() {
        bail!("the controlplane address is empty");
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && !port.contains(']') => {
            let port = port
                .parse()
                .with_context(|| format!("{port:?} is not a port number"))?;
            (host.trim_matches(['[', ']']).to_owned(), port)
        }
        _ => (text.to_owned(), DEFAULT_PORT),
    };
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::parse_address;

    #[test]
    fn addresses_default_to_port_1993() {
        assert_eq!(
            parse_address("cp.example.com").unwrap(),
            ("cp.example.com".into(), 1993)
        );
        assert_eq!(parse_address("cp:443").unwrap(), ("cp".into(), 443));
        assert_eq!(parse_address("[::1]:2000").unwrap(), ("::1".into(), 2000));
        assert!(parse_address("cp:http").is_err());
        assert!(parse_address("").is_err());
    }
}
