//! The API's settings, all from environment variables (the
//! `levers9-dashboard-env` secret on a cluster); every one is listed in
//! docs/dashboard.md.

use std::net::SocketAddr;

use url::Url;

/// Google's issuer: its discovery document and keys live under it.
pub const GOOGLE_ISSUER: &str = "https://accounts.google.com";

/// A session secret shorter than this is refused: it keys the HMAC that
/// every session cookie is signed with.
pub const MIN_SESSION_SECRET_LEN: usize = 32;

/// What was wrong with the environment, said so a person can fix it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} is not set: {1}")]
    Missing(&'static str, &'static str),
    #[error("{name} is not valid: {reason}")]
    Invalid { name: &'static str, reason: String },
}

/// Google (or, in tests, any OpenID provider) sign-in.
#[derive(Clone, Debug)]
pub struct OidcSettings {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    /// Lower-case email domains whose people may sign in.
    pub allowed_domains: Vec<String>,
}

/// Everything the API runs on.
#[derive(Clone, Debug)]
pub struct Config {
    pub listen: SocketAddr,
    /// `http://host:port` of the controlplane's gRPC API (plain gRPC to the
    /// in-cluster name).
    pub controlplane: String,
    /// The controlplane token the API calls with.
    pub token: String,
    /// Where people open the dashboard (the web app's origin): sign-in ends
    /// there, and only it may call the API from a browser.
    pub web_url: Url,
    /// The API as the browser reaches it; the OpenID redirect comes back to
    /// `<api_url>/auth/callback`.
    pub api_url: Url,
    pub cookie_domain: Option<String>,
    pub session_secret: Vec<u8>,
    pub oidc: Option<OidcSettings>,
    /// The development sign-in, which takes any email at its word.
    pub dev_signin: bool,
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
    }

    /// Reads settings through `get` (the environment, or a map in tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let listen = get("LEVERS9_DASHBOARD_LISTEN")
            .unwrap_or_else(|| "0.0.0.0:8080".into())
            .parse()
            .map_err(|e| invalid("LEVERS9_DASHBOARD_LISTEN", format!("{e} (want host:port)")))?;
        let host =
            get("LEVERS9_CONTROLPLANE_HOST").unwrap_or_else(|| "levers9-controlplane".into());
        let port: u16 = get("LEVERS9_CONTROLPLANE_PORT")
            .unwrap_or_else(|| "1993".into())
            .parse()
            .map_err(|e| invalid("LEVERS9_CONTROLPLANE_PORT", format!("{e}")))?;
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host
        };
        let token = get("LEVERS9_TOKEN").ok_or(ConfigError::Missing(
            "LEVERS9_TOKEN",
            "give the API a token from `levers9 token create` (the levers9-dashboard-env secret)",
        ))?;
        let web_url = url_var(&get, "LEVERS9_DASHBOARD_URL")?.ok_or(ConfigError::Missing(
            "LEVERS9_DASHBOARD_URL",
            "set it to where people open the dashboard, e.g. https://dashboard.example.com",
        ))?;
        let api_url = match url_var(&get, "LEVERS9_DASHBOARD_API_URL")? {
            Some(url) => url,
            None => web_url
                .join("/api")
                .map_err(|e| invalid("LEVERS9_DASHBOARD_URL", e.to_string()))?,
        };
        if api_url.scheme() == "http" && !is_local(&api_url) {
            return Err(invalid(
                "LEVERS9_DASHBOARD_API_URL",
                format!(
                    "{api_url} is plain http on a host other than this machine; session cookies \
                     are Secure, so serve the API over https"
                ),
            ));
        }
        let session_secret =
            get("LEVERS9_DASHBOARD_SESSION_SECRET").ok_or(ConfigError::Missing(
                "LEVERS9_DASHBOARD_SESSION_SECRET",
                "make one with `openssl rand -hex 32`",
            ))?;
        if session_secret.len() < MIN_SESSION_SECRET_LEN {
            return Err(invalid(
                "LEVERS9_DASHBOARD_SESSION_SECRET",
                format!(
                    "it has {} characters, at least {MIN_SESSION_SECRET_LEN} are needed \
                     (`openssl rand -hex 32`)",
                    session_secret.len()
                ),
            ));
        }
        let oidc = match get("LEVERS9_DASHBOARD_GOOGLE_CLIENT_ID") {
            None => None,
            Some(client_id) => {
                let client_secret =
                    get("LEVERS9_DASHBOARD_GOOGLE_CLIENT_SECRET").ok_or(ConfigError::Missing(
                        "LEVERS9_DASHBOARD_GOOGLE_CLIENT_SECRET",
                        "Google sign-in needs the OAuth client's secret with its id",
                    ))?;
                let allowed_domains: Vec<String> = get("LEVERS9_DASHBOARD_ALLOWED_DOMAINS")
                    .unwrap_or_default()
                    .split(',')
                    .map(|d| d.trim().trim_start_matches('@').to_ascii_lowercase())
                    .filter(|d| !d.is_empty())
                    .collect();
                if allowed_domains.is_empty() {
                    return Err(ConfigError::Missing(
                        "LEVERS9_DASHBOARD_ALLOWED_DOMAINS",
                        "Google sign-in needs the email domains allowed in, e.g. example.com",
                    ));
                }
                Some(OidcSettings {
                    issuer: get("LEVERS9_DASHBOARD_OIDC_ISSUER")
                        .unwrap_or_else(|| GOOGLE_ISSUER.into()),
                    client_id,
                    client_secret,
                    allowed_domains,
                })
            }
        };
        let dev_signin = match get("LEVERS9_DASHBOARD_DEV_SIGNIN").as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(invalid(
                    "LEVERS9_DASHBOARD_DEV_SIGNIN",
                    format!("{other:?}: use true or false"),
                ))
            }
        };
        let cookie_domain = get("LEVERS9_DASHBOARD_COOKIE_DOMAIN");
        if let Some(domain) = &cookie_domain {
            let valid = domain
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
            if !valid {
                return Err(invalid(
                    "LEVERS9_DASHBOARD_COOKIE_DOMAIN",
                    format!("{domain:?}: want a host name such as example.com"),
                ));
            }
        }
        Ok(Config {
            listen,
            controlplane: format!("http://{host}:{port}"),
            token,
            web_url,
            api_url,
            cookie_domain,
            session_secret: session_secret.into_bytes(),
            oidc,
            dev_signin,
        })
    }

    /// Cookies are Secure everywhere but on a local http API, where the
    /// browser would drop a Secure cookie.
    pub fn secure_cookies(&self) -> bool {
        self.api_url.scheme() == "https"
    }

    /// The web app's origin, as browsers send it in `Origin`.
    pub fn web_origin(&self) -> String {
        self.web_url.origin().ascii_serialization()
    }
}

fn url_var(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<Url>, ConfigError> {
    let Some(value) = get(name) else {
        return Ok(None);
    };
    let url = Url::parse(value.trim_end_matches('/'))
        .map_err(|e| invalid(name, format!("{value:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(name, format!("{value:?}: use an http(s) URL")));
    }
    Ok(Some(url))
}

fn is_local(url: &Url) -> bool {
    matches!(
        url.host_str(),
        Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
    )
}

fn invalid(name: &'static str, reason: String) -> ConfigError {
    ConfigError::Invalid { name, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let mut vars = vec![
            ("LEVERS9_TOKEN", "tok"),
            ("LEVERS9_DASHBOARD_URL", "https://dashboard.example.com"),
            (
                "LEVERS9_DASHBOARD_SESSION_SECRET",
                "0123456789abcdef0123456789abcdef",
            ),
        ];
        vars.extend_from_slice(extra);
        Config::from_lookup(|name| {
            vars.iter()
                .rev()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn the_api_defaults_to_the_dashboards_own_host_and_the_in_cluster_controlplane() {
        let c = config(&[]).expect("valid");
        assert_eq!(c.api_url.as_str(), "https://dashboard.example.com/api");
        assert_eq!(c.controlplane, "http://levers9-controlplane:1993");
        assert!(c.secure_cookies());
        assert!(!c.dev_signin);
        assert!(c.oidc.is_none());
    }

    #[test]
    fn a_short_session_secret_is_refused() {
        let err = config(&[("LEVERS9_DASHBOARD_SESSION_SECRET", "short")]).unwrap_err();
        assert!(err.to_string().contains("at least 32"), "{err}");
    }

    #[test]
    fn google_without_allowed_domains_is_refused() {
        let err = config(&[
            ("LEVERS9_DASHBOARD_GOOGLE_CLIENT_ID", "id"),
            ("LEVERS9_DASHBOARD_GOOGLE_CLIENT_SECRET", "secret"),
        ])
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("LEVERS9_DASHBOARD_ALLOWED_DOMAINS"),
            "{err}"
        );
    }

    #[test]
    fn a_cookie_domain_must_be_a_host_name() {
        let err =
            config(&[("LEVERS9_DASHBOARD_COOKIE_DOMAIN", "example.com; Path=/x")]).unwrap_err();
        assert!(err.to_string().contains("host name"), "{err}");
        let ok = config(&[("LEVERS9_DASHBOARD_COOKIE_DOMAIN", "example.com")]).expect("valid");
        assert_eq!(ok.cookie_domain.as_deref(), Some("example.com"));
    }

    #[test]
    fn plain_http_is_only_for_a_local_api() {
        let err = config(&[("LEVERS9_DASHBOARD_API_URL", "http://api.example.com")]).unwrap_err();
        assert!(err.to_string().contains("https"), "{err}");
        let local = config(&[("LEVERS9_DASHBOARD_API_URL", "http://127.0.0.1:8080/api")])
            .expect("local http");
        assert!(!local.secure_cookies());
    }
}
