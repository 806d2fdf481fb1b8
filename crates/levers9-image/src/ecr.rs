//! ECR tokens: `GetAuthorizationToken` with the process's AWS credentials
//! (on EKS the pod's IAM role, through IRSA's `AWS_ROLE_ARN` and
//! `AWS_WEB_IDENTITY_TOKEN_FILE`, which the AWS SDK's default chain reads),
//! cached per region and fetched again before they expire.
//!
//! An ECR token is `base64("AWS:" + password)`, good for 12 hours for every
//! registry of its region that the role may read (or push to); registries
//! take it as HTTP basic authentication.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use futures::future::BoxFuture;

use crate::credentials::{CredentialsError, RegistryCredentials};

/// Fetch a token again this long before it expires: ECR tokens last 12 h,
/// so an hour early costs one call in eleven hours and leaves the longest
/// pull plenty of validity. Shorter-lived tokens are refreshed after three
/// quarters of their life.
const REFRESH_BEFORE: Duration = Duration::from_secs(3600);
/// A token this close to its expiry is not used: it could expire in the
/// middle of a request.
const EXPIRY_SLACK: Duration = Duration::from_secs(60);
/// After a failed refresh, the still-valid token is used this long before
/// ECR is asked again, so an outage does not turn every pull into a call.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(60);
/// Deadline of one `GetAuthorizationToken` (credentials exchange included).
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// The region of an ECR registry host
/// (`<account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn]`), if it is one.
pub fn ecr_region(host: &str) -> Option<String> {
    let host = host.split(':').next().unwrap_or_default();
    let labels: Vec<&str> = host.split('.').collect();
    let (account, rest) = labels.split_first()?;
    if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match rest {
        ["dkr", "ecr" | "ecr-fips", region, "amazonaws", "com"]
        | ["dkr", "ecr" | "ecr-fips", region, "amazonaws", "com", "cn"]
            if !region.is_empty() =>
        {
            Some((*region).to_owned())
        }
        _ => None,
    }
}

/// Whether `host` is an ECR registry.
pub fn is_ecr_host(host: &str) -> bool {
    ecr_region(host).is_some()
}

/// One authorization token from ECR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EcrToken {
    /// Basic credentials (`AWS` and the password).
    pub credentials: RegistryCredentials,
    /// When ECR says it stops working.
    pub expires_at: SystemTime,
}

impl EcrToken {
    /// From `authorizationData[].authorizationToken` (base64 of
    /// `USER:PASSWORD`) and its `expiresAt`.
    ///
    /// # Errors
    /// A token that is not base64 of `USER:PASSWORD`; the message does not
    /// contain it.
    pub fn parse(authorization_token: &str, expires_at: SystemTime) -> Result<Self, String> {
        let decoded = STANDARD
            .decode(authorization_token.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or("its authorization token is not base64 of USER:PASSWORD")?;
        match decoded.split_once(':') {
            Some((user, password)) if !user.is_empty() && !password.is_empty() => Ok(EcrToken {
                credentials: RegistryCredentials::Basic {
                    username: user.to_owned(),
                    password: password.to_owned(),
                },
                expires_at,
            }),
            _ => Err("its authorization token is not base64 of USER:PASSWORD".into()),
        }
    }
}

/// Where tokens come from: ECR through the AWS SDK ([`SdkTokenSource`]),
/// or a stand-in in tests.
pub trait TokenSource: Send + Sync {
    /// One `GetAuthorizationToken` in `region`; the error says why, without
    /// secrets.
    fn fetch<'a>(&'a self, region: &'a str) -> BoxFuture<'a, Result<EcrToken, String>>;
}

/// The time, so refresh can be tested with a fake clock.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> SystemTime;
}

/// The [`Clock`] of [`SystemTime::now`], for everything but tests.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A region's token and what happened last.
#[derive(Default)]
struct Cached {
    token: Option<EcrToken>,
    fetched_at: Option<SystemTime>,
    /// After a failed refresh: keep using the token until then.
    retry_after: Option<SystemTime>,
}

/// What to do about a region's token at `now`.
#[derive(Debug, PartialEq, Eq)]
enum Decision {
    /// The cached token is good.
    Use,
    /// Fetch one; `fallback` when the cached token may still be used if
    /// that fails.
    Fetch { fallback: bool },
}

impl Cached {
    fn decide(&self, now: SystemTime) -> Decision {
        let (Some(token), Some(fetched_at)) = (&self.token, self.fetched_at) else {
            return Decision::Fetch { fallback: false };
        };
        let usable = now + EXPIRY_SLACK < token.expires_at;
        if !usable {
            return Decision::Fetch { fallback: false };
        }
        let lifetime = token
            .expires_at
            .duration_since(fetched_at)
            .unwrap_or_default();
        let refresh_at = token.expires_at - REFRESH_BEFORE.min(lifetime / 4);
        if now < refresh_at || self.retry_after.is_some_and(|t| now < t) {
            return Decision::Use;
        }
        Decision::Fetch { fallback: true }
    }
}

/// ECR tokens per region, fetched on first use and again before they
/// expire. Cheap to clone; clones share the cache.
///
/// # Guarantees
/// * A token is never handed out within a minute of its expiry.
/// * One fetch at a time per cache: concurrent callers wait for it.
/// * A failed refresh while the old token is still valid keeps the old
///   token (and logs a warning) and asks again a minute later; a failure
///   with no valid token is an error.
#[derive(Clone)]
pub struct EcrTokens {
    source: Arc<dyn TokenSource>,
    clock: Arc<dyn Clock>,
    regions: Arc<tokio::sync::Mutex<HashMap<String, Cached>>>,
}

impl Default for EcrTokens {
    /// Tokens from ECR with the AWS SDK's default credentials.
    fn default() -> Self {
        EcrTokens::new(Arc::new(SdkTokenSource::default()), Arc::new(SystemClock))
    }
}

impl EcrTokens {
    /// Tokens from `source`, timed by `clock`.
    pub fn new(source: Arc<dyn TokenSource>, clock: Arc<dyn Clock>) -> Self {
        EcrTokens {
            source,
            clock,
            regions: Arc::default(),
        }
    }

    /// Credentials for the ECR registry `host`.
    ///
    /// # Errors
    /// [`CredentialsError::Ecr`] when `host` is no ECR host, or no token
    /// can be had and none is still valid.
    pub async fn credentials(&self, host: &str) -> Result<RegistryCredentials, CredentialsError> {
        let fail = |reason: String| CredentialsError::Ecr {
            registry: host.to_owned(),
            reason,
        };
        let region = ecr_region(host).ok_or_else(|| {
            fail("it is not an ECR host (ACCOUNT.dkr.ecr.REGION.amazonaws.com)".into())
        })?;
        let mut regions = self.regions.lock().await;
        let cached = regions.entry(region.clone()).or_default();
        let now = self.clock.now();
        let fallback = match cached.decide(now) {
            Decision::Use => return Ok(cached_credentials(cached)),
            Decision::Fetch { fallback } => fallback,
        };
        let fetched = match tokio::time::timeout(FETCH_TIMEOUT, self.source.fetch(&region)).await {
            Ok(fetched) => fetched,
            Err(_) => Err(format!(
                "ECR did not answer within {} s",
                FETCH_TIMEOUT.as_secs()
            )),
        };
        match fetched {
            Ok(token) => {
                tracing::info!(%region, "fetched an ECR token");
                cached.token = Some(token);
                cached.fetched_at = Some(now);
                cached.retry_after = None;
                Ok(cached_credentials(cached))
            }
            Err(reason) if fallback => {
                tracing::warn!(%region, %reason, "cannot refresh the ECR token; using the current one until it expires");
                cached.retry_after = Some(now + RETRY_AFTER_FAILURE);
                Ok(cached_credentials(cached))
            }
            Err(reason) => Err(fail(reason)),
        }
    }
}

fn cached_credentials(cached: &Cached) -> RegistryCredentials {
    cached
        .token
        .as_ref()
        .map(|t| t.credentials.clone())
        .unwrap_or_default()
}

/// `GetAuthorizationToken` through the AWS SDK for Rust: credentials from
/// the default chain (environment, web identity / IRSA, profile, container
/// and instance metadata), one client per region.
#[derive(Default)]
pub struct SdkTokenSource {
    endpoint_url: Option<String>,
    credentials: Option<aws_sdk_ecr::config::Credentials>,
    clients: tokio::sync::Mutex<HashMap<String, aws_sdk_ecr::Client>>,
}

impl SdkTokenSource {
    /// Talks to `endpoint_url` instead of ECR, signing with fixed
    /// `credentials`: for a stand-in endpoint in tests.
    pub fn with_endpoint(
        endpoint_url: impl Into<String>,
        credentials: aws_sdk_ecr::config::Credentials,
    ) -> Self {
        SdkTokenSource {
            endpoint_url: Some(endpoint_url.into()),
            credentials: Some(credentials),
            clients: Default::default(),
        }
    }

    async fn client(&self, region: &str) -> aws_sdk_ecr::Client {
        let mut clients = self.clients.lock().await;
        if let Some(client) = clients.get(region) {
            return client.clone();
        }
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(aws_sdk_ecr::config::Region::new(region.to_owned()));
        if let Some(credentials) = &self.credentials {
            loader = loader.credentials_provider(credentials.clone());
        }
        let sdk = loader.load().await;
        let mut config = aws_sdk_ecr::config::Builder::from(&sdk);
        if let Some(url) = &self.endpoint_url {
            config = config.endpoint_url(url);
        }
        let client = aws_sdk_ecr::Client::from_conf(config.build());
        clients.insert(region.to_owned(), client.clone());
        client
    }
}

impl TokenSource for SdkTokenSource {
    fn fetch<'a>(&'a self, region: &'a str) -> BoxFuture<'a, Result<EcrToken, String>> {
        Box::pin(async move {
            let client = self.client(region).await;
            let answer = client.get_authorization_token().send().await.map_err(|e| {
                format!(
                    "GetAuthorizationToken failed: {}",
                    aws_sdk_ecr::error::DisplayErrorContext(&e)
                )
            })?;
            let data = answer
                .authorization_data()
                .first()
                .ok_or("GetAuthorizationToken returned no authorization data")?;
            let token = data
                .authorization_token()
                .ok_or("GetAuthorizationToken returned no token")?;
            let expires_at = data
                .expires_at()
                .and_then(|t| SystemTime::try_from(*t).ok())
                .ok_or("GetAuthorizationToken returned a token without its expiry")?;
            EcrToken::parse(token, expires_at)
        })
    }
}

#[cfg(test)]
mod tests;
