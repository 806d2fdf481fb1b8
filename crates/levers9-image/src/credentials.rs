//! Registry credentials: the docker config JSON format they come in, and the
//! [`RegistryKeychain`] that answers "what do I send to this registry?" for
//! the worker's pulls, the controlplane's tag resolution and image builds.
//!
//! The format is the one of `~/.docker/config.json` and of Kubernetes
//! `kubernetes.io/dockerconfigjson` Secrets (`.dockerconfigjson`):
//!
//! ```json
//! {"auths": {
//!    "registry.example.com": {"auth": "base64(user:password)"},
//!    "ghcr.io": {"username": "ci", "password": "…"},
//!    "x.azurecr.io": {"auth": "base64(00000000-0000-0000-0000-000000000000:)", "identitytoken": "…"},
//!    "r.example.org": {"registrytoken": "…"}},
//!  "credHelpers": {"123456789012.dkr.ecr.eu-west-1.amazonaws.com": "ecr-login"}}
//! ```
//!
//! ECR registries (`<account>.dkr.ecr.<region>.amazonaws.com`) with no
//! entry of their own get tokens from ECR with the process's AWS
//! credentials (on EKS: the pod's IAM role through IRSA), see `ecr`.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::Deserialize;

use crate::ecr::{is_ecr_host, EcrTokens};

/// Credentials for one registry.
///
/// `Debug` never prints secrets.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum RegistryCredentials {
    /// No credentials (anonymous bearer tokens are still fetched when the
    /// registry asks for them).
    #[default]
    Anonymous,
    /// HTTP basic authentication (also exchanged for a bearer token when the
    /// registry uses token authentication).
    Basic {
        /// User name.
        username: String,
        /// Password or access token.
        password: String,
    },
    /// A ready-made bearer token.
    Bearer {
        /// Sent as is in `Authorization: Bearer`; from an entry's
        /// `registrytoken`.
        token: String,
    },
}

impl fmt::Debug for RegistryCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryCredentials::Anonymous => f.write_str("Anonymous"),
            RegistryCredentials::Basic { username, .. } => {
                write!(
                    f,
                    "Basic {{ username: {username:?}, password: <redacted> }}"
                )
            }
            RegistryCredentials::Bearer { .. } => f.write_str("Bearer { token: <redacted> }"),
        }
    }
}

impl RegistryCredentials {
    /// The value of an `Authorization` header sending these credentials
    /// directly (`Basic …` or `Bearer …`); `None` when anonymous.
    pub fn authorization(&self) -> Option<String> {
        match self {
            RegistryCredentials::Anonymous => None,
            RegistryCredentials::Basic { username, password } => Some(format!(
                "Basic {}",
                STANDARD.encode(format!("{username}:{password}"))
            )),
            RegistryCredentials::Bearer { token } => Some(format!("Bearer {token}")),
        }
    }
}

/// A credentials file or entry that cannot be used. The messages name the
/// registry and the field, never a secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsError {
    /// The file could not be read.
    #[error("cannot read registry credentials file {path}: {source}")]
    Read {
        /// The credentials file's path, as given.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not docker config JSON (nor the older TOML format).
    #[error("{origin} is not a docker config JSON file ({{\"auths\": {{HOST: {{\"auth\": …}}}}}}): {reason}")]
    Syntax {
        /// The file, or where the text came from.
        origin: String,
        /// What the parser said (positions, not content).
        reason: String,
    },
    /// One registry's entry cannot be used.
    #[error("{origin}: the entry of registry {registry:?} {reason}")]
    Entry {
        /// The file, or where the text came from.
        origin: String,
        /// The registry host the entry is for.
        registry: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No token could be had from ECR for an ECR registry.
    #[error("cannot get a token for ECR registry {registry}: {reason}")]
    Ecr {
        /// The ECR registry host, lowercased, e.g.
        /// `<account>.dkr.ecr.<region>.amazonaws.com`.
        registry: String,
        /// Why.
        reason: String,
    },
}

/// One entry of `auths`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct AuthEntry {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    identitytoken: Option<String>,
    registrytoken: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct DockerConfig {
    auths: HashMap<String, AuthEntry>,
    cred_helpers: HashMap<String, String>,
    creds_store: Option<String>,
}

/// How a registry host is authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostCredentials {
    /// Fixed credentials.
    Static(RegistryCredentials),
    /// Tokens from ECR (`credHelpers: {HOST: "ecr-login"}`, or any ECR host
    /// with no entry).
    Ecr,
}

/// The canonical form of a registry host as docker config keys write it:
/// no scheme, no path, lower case, and Docker Hub's aliases as `docker.io`.
pub fn normalize_registry_host(key: &str) -> String {
    let key = key.trim();
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = key
        .split('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            "docker.io".to_owned()
        }
        _ => host,
    }
}

fn entry_credentials(
    origin: &str,
    registry: &str,
    entry: AuthEntry,
) -> Result<RegistryCredentials, CredentialsError> {
    let bad = |reason: &str| CredentialsError::Entry {
        origin: origin.to_owned(),
        registry: registry.to_owned(),
        reason: reason.to_owned(),
    };
    let nonempty = |s: Option<String>| s.filter(|s| !s.is_empty());
    // The user name of `auth`, if any: an identity token goes with it.
    let decoded = match nonempty(entry.auth) {
        Some(auth) => {
            let bytes = STANDARD
                .decode(auth.trim())
                .map_err(|_| bad("has an \"auth\" that is not base64"))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| bad("has an \"auth\" that is not UTF-8 once decoded"))?;
            let (user, password) = text
                .split_once(':')
                .ok_or_else(|| bad("has an \"auth\" that is not base64 of USER:PASSWORD"))?;
            Some((user.to_owned(), password.to_owned()))
        }
        None => None,
    };
    if let Some(token) = nonempty(entry.registrytoken) {
        return Ok(RegistryCredentials::Bearer { token });
    }
    if let Some(token) = nonempty(entry.identitytoken) {
        // As `docker login` with a refresh token: sent as the password of
        // the entry's user (the token server exchanges it).
        let username = nonempty(entry.username)
            .or_else(|| decoded.as_ref().map(|(u, _)| u.clone()))
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "<token>".to_owned());
        return Ok(RegistryCredentials::Basic {
            username,
            password: token,
        });
    }
    match (nonempty(entry.username), entry.password, decoded) {
        (Some(username), Some(password), _) => Ok(RegistryCredentials::Basic { username, password }),
        (_, _, Some((username, password))) if !username.is_empty() => {
            Ok(RegistryCredentials::Basic { username, password })
        }
        _ => Err(bad(
            "has none of \"auth\", \"username\" and \"password\", \"identitytoken\" or \"registrytoken\"",
        )),
    }
}

/// Reads docker config JSON text (`origin` names it in errors) into the
/// credentials of each registry host (see [`normalize_registry_host`]).
///
/// # Errors
/// Invalid JSON, an entry without usable credentials, a `credsStore`, or a
/// `credHelpers` entry other than `ecr-login` for an ECR host: levers9 runs
/// no credential helper programs.
pub fn parse_docker_config(
    origin: &str,
    text: &str,
) -> Result<HashMap<String, HostCredentials>, CredentialsError> {
    let config: DockerConfig =
        serde_json::from_str(text).map_err(|e| CredentialsError::Syntax {
            origin: origin.to_owned(),
            reason: format!(
                "line {} column {}: {:?}",
                e.line(),
                e.column(),
                e.classify()
            ),
        })?;
    if let Some(store) = config.creds_store.filter(|s| !s.is_empty()) {
        return Err(CredentialsError::Syntax {
            origin: origin.to_owned(),
            reason: format!(
                "it keeps its credentials in the credential store {store:?} (\"credsStore\"), \
                 which levers9 does not run: write them into \"auths\" instead"
            ),
        });
    }
    let mut out = HashMap::new();
    for (key, entry) in config.auths {
        let host = normalize_registry_host(&key);
        let credentials = entry_credentials(origin, &host, entry)?;
        out.insert(host, HostCredentials::Static(credentials));
    }
    for (key, helper) in config.cred_helpers {
        let host = normalize_registry_host(&key);
        if helper != "ecr-login" || !is_ecr_host(&host) {
            return Err(CredentialsError::Entry {
                origin: origin.to_owned(),
                registry: host,
                reason: format!(
                    "names the credential helper {helper:?}: levers9 runs no helpers and only \
                     understands \"ecr-login\" for ECR registries (it fetches their tokens itself)"
                ),
            });
        }
        out.insert(host, HostCredentials::Ecr);
    }
    Ok(out)
}

/// Docker config JSON holding `credentials` for each host: what an image
/// build container gets to push with (`Anonymous` entries are left out).
pub fn docker_config_json<'a>(
    credentials: impl IntoIterator<Item = (&'a str, &'a RegistryCredentials)>,
) -> String {
    let mut auths = serde_json::Map::new();
    for (host, credentials) in credentials {
        let entry = match credentials {
            RegistryCredentials::Anonymous => continue,
            RegistryCredentials::Basic { username, password } => serde_json::json!({
                "auth": STANDARD.encode(format!("{username}:{password}"))
            }),
            RegistryCredentials::Bearer { token } => serde_json::json!({ "registrytoken": token }),
        };
        auths.insert(host.to_owned(), entry);
    }
    serde_json::json!({ "auths": auths }).to_string()
}

/// The credentials of every registry levers9 talks to: fixed ones from a
/// docker config file, ECR tokens fetched and refreshed for ECR hosts, and
/// anonymous access for the rest. Cheap to clone; clones share the ECR
/// token caches.
#[derive(Clone, Default)]
pub struct RegistryKeychain {
    hosts: Arc<HashMap<String, HostCredentials>>,
    ecr: EcrTokens,
}

impl fmt::Debug for RegistryKeychain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut hosts: Vec<&String> = self.hosts.keys().collect();
        hosts.sort();
        f.debug_struct("RegistryKeychain")
            .field("hosts", &hosts)
            .finish_non_exhaustive()
    }
}

impl RegistryKeychain {
    /// From fixed credentials per host (hosts are normalized).
    pub fn new(credentials: HashMap<String, RegistryCredentials>) -> Self {
        Self::from_hosts(
            credentials
                .into_iter()
                .map(|(host, c)| (normalize_registry_host(&host), HostCredentials::Static(c)))
                .collect(),
        )
    }

    /// From what [`parse_docker_config`] read.
    pub fn from_hosts(hosts: HashMap<String, HostCredentials>) -> Self {
        RegistryKeychain {
            hosts: Arc::new(hosts),
            ecr: EcrTokens::default(),
        }
    }

    /// Reads a docker config JSON file. Warns (without content) when others
    /// may read it.
    ///
    /// # Errors
    /// See [`parse_docker_config`]; also an unreadable file.
    pub fn from_file(path: &Path) -> Result<Self, CredentialsError> {
        Ok(Self::from_hosts(read_docker_config_file(path)?))
    }

    /// Uses `ecr` for ECR tokens (tests give a stand-in source and clock).
    pub fn with_ecr(mut self, ecr: EcrTokens) -> Self {
        self.ecr = ecr;
        self
    }

    /// The hosts with an entry of their own (no secrets).
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = self.hosts.keys().cloned().collect();
        hosts.sort();
        hosts
    }

    /// Docker config JSON with the credentials of `hosts` (anonymous ones
    /// left out); `None` when every one is anonymous.
    ///
    /// # Errors
    /// As [`RegistryKeychain::credentials_for`].
    pub async fn docker_config_for(
        &self,
        hosts: &[String],
    ) -> Result<Option<String>, CredentialsError> {
        let mut entries = Vec::with_capacity(hosts.len());
        for host in hosts {
            entries.push((host.as_str(), self.credentials_for(host).await?));
        }
        if entries
            .iter()
            .all(|(_, c)| *c == RegistryCredentials::Anonymous)
        {
            return Ok(None);
        }
        Ok(Some(docker_config_json(
            entries.iter().map(|(h, c)| (*h, c)),
        )))
    }

    /// What to send to registry `host`: its own entry, an ECR token for an
    /// ECR host with none, or nothing.
    ///
    /// # Errors
    /// [`CredentialsError::Ecr`] when an ECR token is needed and cannot be
    /// had (no AWS credentials, ECR unreachable or refusing).
    pub async fn credentials_for(
        &self,
        host: &str,
    ) -> Result<RegistryCredentials, CredentialsError> {
        let host = normalize_registry_host(host);
        match self.hosts.get(&host) {
            Some(HostCredentials::Static(credentials)) => Ok(credentials.clone()),
            Some(HostCredentials::Ecr) => self.ecr.credentials(&host).await,
            None if is_ecr_host(&host) => self.ecr.credentials(&host).await,
            None => Ok(RegistryCredentials::Anonymous),
        }
    }
}

/// Reads a docker config JSON file into credentials per host.
///
/// # Errors
/// See [`parse_docker_config`]; also an unreadable file.
pub fn read_docker_config_file(
    path: &Path,
) -> Result<HashMap<String, HostCredentials>, CredentialsError> {
    use std::os::unix::fs::PermissionsExt as _;
    let read_error = |source| CredentialsError::Read {
        path: path.display().to_string(),
        source,
    };
    let mode = std::fs::metadata(path)
        .map_err(read_error)?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        tracing::warn!(file = %path.display(), "the registry credentials file is readable by others: chmod 600 it");
    }
    let text = std::fs::read_to_string(path).map_err(read_error)?;
    parse_docker_config(&path.display().to_string(), &text)
}

#[cfg(test)]
mod tests;
