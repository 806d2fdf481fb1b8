//! Registry authentication for the image service's own calls (tag
//! resolution, reading and deleting built images): answers a registry's
//! `401` challenge with the credentials of the [`RegistryKeychain`] —
//! `Basic` straight away, `Bearer` through the registry's token server —
//! and reuses the answer for later calls to the same repository.
//!
//! Credentials only ever travel in `Authorization` headers; no error here
//! carries one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use levers9_image::{RegistryCredentials, RegistryKeychain};
use levers9_sync::Lock;

use super::ImageServiceError;

/// How long a token server's token is reused when it names no lifetime
/// (the distribution spec's default is 60 s).
const DEFAULT_TOKEN_SECONDS: u64 = 60;
/// Tokens are dropped this long before they expire, so none expires in
/// flight; and never kept longer than `MAX_TOKEN_SECONDS`.
const TOKEN_SLACK: Duration = Duration::from_secs(10);
const MAX_TOKEN_SECONDS: u64 = 300;

/// A `WWW-Authenticate` challenge.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Challenge {
    /// `Basic realm=…`: send basic credentials with every request.
    Basic,
    /// `Bearer realm=…,service=…,scope=…`: get a token from `realm`.
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
    },
}

/// Parses a `WWW-Authenticate` value (one challenge, quoted parameters).
pub(crate) fn parse_challenge(value: &str) -> Option<Challenge> {
    let (scheme, rest) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    let mut params = HashMap::new();
    let mut rest = rest.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let key = key.trim().to_ascii_lowercase();
        let after = after.trim_start();
        let (val, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"')?;
            (&quoted[..end], &quoted[end + 1..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        params.insert(key, val.to_owned());
        rest = remaining.trim_start().trim_start_matches(',').trim_start();
    }
    match scheme.to_ascii_lowercase().as_str() {
        "basic" => Some(Challenge::Basic),
        "bearer" => Some(Challenge::Bearer {
            realm: params.remove("realm")?,
            service: params.remove("service"),
            scope: params.remove("scope"),
        }),
        _ => None,
    }
}

/// The `Authorization` header that answered a challenge, per registry
/// host, repository and kind of call.
#[derive(Default)]
pub struct Authorizer {
    keychain: RegistryKeychain,
    answers: Lock<HashMap<(String, String, bool), Answer>>,
}

enum Answer {
    /// The host takes basic credentials (looked up again each time, so a
    /// refreshed ECR token is used).
    Basic,
    /// A token server's token, until `until`.
    Token { header: String, until: Instant },
}

impl Authorizer {
    /// With the credentials of `keychain`.
    pub fn new(keychain: RegistryKeychain) -> Self {
        Authorizer {
            keychain,
            answers: Lock::default(),
        }
    }

    async fn credentials(&self, host: &str) -> Result<RegistryCredentials, ImageServiceError> {
        self.keychain
            .credentials_for(host)
            .await
            .map_err(|e| ImageServiceError::Credentials(e.to_string()))
    }

    /// The header to send before any challenge, from an earlier answer.
    pub async fn known(
        &self,
        host: &str,
        repo: &str,
        delete: bool,
    ) -> Result<Option<String>, ImageServiceError> {
        let key = (host.to_owned(), repo.to_owned(), delete);
        let basic = {
            let mut answers = self.answers.lock();
            match answers.get(&key) {
                None => return Ok(None),
                Some(Answer::Token { header, until }) if Instant::now() < *until => {
                    return Ok(Some(header.clone()))
                }
                Some(Answer::Token { .. }) => {
                    answers.remove(&key);
                    return Ok(None);
                }
                Some(Answer::Basic) => true,
            }
        };
        debug_assert!(basic);
        Ok(self.credentials(host).await?.authorization())
    }

    /// Answers the challenge of a `401` to a call on `host`/`repo`: the
    /// header to send again with, or `None` when there is nothing to answer
    /// with (no credentials for a `Basic` challenge, or an unreadable one).
    pub async fn answer(
        &self,
        http: &reqwest::Client,
        host: &str,
        repo: &str,
        delete: bool,
        www_authenticate: Option<&str>,
    ) -> Result<Option<String>, ImageServiceError> {
        let Some(challenge) = www_authenticate.and_then(parse_challenge) else {
            return Ok(None);
        };
        let credentials = self.credentials(host).await?;
        let key = (host.to_owned(), repo.to_owned(), delete);
        let (header, answer) = match challenge {
            Challenge::Basic => match credentials {
                RegistryCredentials::Basic { .. } => (credentials.authorization(), Answer::Basic),
                _ => return Ok(None),
            },
            Challenge::Bearer {
                realm,
                service,
                scope,
            } => {
                let action = if delete { "delete" } else { "pull" };
                let scope = scope.unwrap_or_else(|| format!("repository:{repo}:{action}"));
                let (header, lifetime) = self
                    .token(http, host, &realm, service.as_deref(), &scope, &credentials)
                    .await?;
                let until = Instant::now() + lifetime;
                (Some(header.clone()), Answer::Token { header, until })
            }
        };
        self.answers.lock().insert(key, answer);
        Ok(header)
    }

    /// A token from the token server `realm`, as a header and how long to
    /// reuse it.
    async fn token(
        &self,
        http: &reqwest::Client,
        host: &str,
        realm: &str,
        service: Option<&str>,
        scope: &str,
        credentials: &RegistryCredentials,
    ) -> Result<(String, Duration), ImageServiceError> {
        if let RegistryCredentials::Bearer { .. } = credentials {
            // A ready-made token is sent as it is.
            let header = credentials.authorization().unwrap_or_default();
            return Ok((header, Duration::from_secs(MAX_TOKEN_SECONDS)));
        }
        let unavailable = |detail: String| ImageServiceError::RegistryUnavailable {
            host: host.to_owned(),
            what: format!("getting a token for {scope} from {realm}"),
            detail,
        };
        let mut query = vec![("scope", scope)];
        if let Some(service) = service {
            query.push(("service", service));
        }
        let mut request = http.get(realm).query(&query);
        if let Some(header) = credentials.authorization() {
            request = request.header(reqwest::header::AUTHORIZATION, header);
        }
        let response = request
            .send()
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        match response.status().as_u16() {
            200..=299 => {}
            401 | 403 => {
                return Err(ImageServiceError::CredentialsRefused {
                    host: host.to_owned(),
                    scope: scope.to_owned(),
                })
            }
            code => return Err(unavailable(format!("HTTP {code}"))),
        }
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
            expires_in: Option<u64>,
        }
        let token: Token = response
            .json()
            .await
            .map_err(|_| unavailable("the answer is not a token".into()))?;
        let seconds = token_seconds(token.expires_in);
        let token = token
            .token
            .or(token.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| unavailable("the answer has no token".into()))?;
        Ok((
            format!("Bearer {token}"),
            Duration::from_secs(seconds).saturating_sub(TOKEN_SLACK),
        ))
    }
}

fn token_seconds(expires_in: Option<u64>) -> u64 {
    expires_in
        .unwrap_or(DEFAULT_TOKEN_SECONDS)
        .min(MAX_TOKEN_SECONDS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_parsed() {
        assert_eq!(
            parse_challenge(r#"Basic realm="levers9 test""#),
            Some(Challenge::Basic)
        );
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:a/b:pull""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example.com/token".into(),
                service: Some("registry.example.com".into()),
                scope: Some("repository:a/b:pull".into()),
            })
        );
        assert_eq!(parse_challenge("Bearer service=x"), None);
        assert_eq!(parse_challenge("Negotiate"), None);
    }
}
