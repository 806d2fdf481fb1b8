//! Objects in an S3-compatible bucket: `<prefix>sha256/<hex>`, one PUT per
//! object, only after the caller's digest was verified.
//!
//! # Guarantees
//! - An object is under its final key whole or not at all: a single PUT is
//!   atomic in S3 (a failed or cut upload leaves no object), and the bytes'
//!   sha256 was checked against the digest before the upload began, so no
//!   wrong or partial bytes are ever addressed by a digest.
//! - The request is signed over the payload's sha256 (SigV4
//!   `x-amz-content-sha256`, which equals the digest), so the server refuses
//!   bytes altered on the way.
//! - Every request has a deadline: [`CONNECT_TIMEOUT`] to connect,
//!   [`REQUEST_TIMEOUT`] for the whole request, and a few retries within
//!   [`RETRY_TIMEOUT`].
//! - Neither key appears in `Debug`, in logs or in an error.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use levers9_config::WorkspaceStorageConfig;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{
    BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig,
};

use super::{ObjectBackend, ObjectStorageError};

/// Connecting to the endpoint: a loopback or in-region server answers in
/// milliseconds, so seconds mean it is not there.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One whole request, the body included: the largest object (256 MiB) at a
/// slow 1 MiB/s still fits.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// Retries of a failed request stop after this long, so a caller hears of
/// an outage in seconds rather than the client default of minutes.
pub const RETRY_TIMEOUT: Duration = Duration::from_secs(20);

/// Retries of one request (idempotent: every PUT of a key has the same bytes).
const MAX_RETRIES: usize = 3;

/// A bucket of blobs named by digest.
pub struct S3Objects {
    store: Arc<dyn ObjectStore>,
    endpoint: String,
    bucket: String,
    prefix: String,
    /// Removed from every error text the client hands back.
    keys: [String; 2],
}

impl fmt::Debug for S3Objects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Objects")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl S3Objects {
    /// A client for `storage.workspace`. Makes no request; see
    /// [`ObjectBackend::check`].
    ///
    /// # Errors
    /// The endpoint or bucket cannot make a client.
    pub fn new(config: &WorkspaceStorageConfig) -> Result<Self, ObjectStorageError> {
        let endpoint = if config.endpoint.is_empty() {
            format!("https://s3.{}.amazonaws.com", config.region)
        } else {
            config.endpoint.trim_end_matches('/').to_owned()
        };
        let options = ClientOptions::new()
            .with_allow_http(endpoint.starts_with("http://"))
            .with_connect_timeout(CONNECT_TIMEOUT)
            .with_timeout(REQUEST_TIMEOUT);
        let retry = RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: MAX_RETRIES,
            retry_timeout: RETRY_TIMEOUT,
        };
        let keys = [
            config.access_key_id.expose().to_owned(),
            config.secret_access_key.expose().to_owned(),
        ];
        let store = AmazonS3Builder::new()
            .with_endpoint(&endpoint)
            .with_region(&config.region)
            .with_bucket_name(&config.bucket)
            .with_virtual_hosted_style_request(!config.path_style)
            .with_access_key_id(config.access_key_id.expose())
            .with_secret_access_key(config.secret_access_key.expose())
            .with_client_options(options)
            .with_retry(retry)
            .build()
            .map_err(|e| ObjectStorageError::Config(scrub(&e.to_string(), &keys)))?;
        Ok(Self {
            store: Arc::new(store),
            endpoint,
            bucket: config.bucket.clone(),
            prefix: config.normalized_prefix(),
            keys,
        })
    }

    fn key(&self, hex: &str) -> Path {
        Path::from(format!("{}sha256/{hex}", self.prefix))
    }

    /// Turns a client error into one that says what to check, keys removed.
    /// S3 servers name the failure in the `<Code>` of their error body
    /// (`SignatureDoesNotMatch`, `NoSuchBucket`…), the same on AWS and on
    /// S3-compatible servers, and the client does not map every operation's
    /// 403 to a variant of its own, so the code decides.
    fn error(&self, error: object_store::Error) -> ObjectStorageError {
        let text = scrub(&with_causes(&error), &self.keys);
        let code = xml_field(&text, "Code");
        let detail = match (code, xml_field(&text, "Message")) {
            (Some(code), Some(message)) => format!("the server answered {code}: {message}"),
            (Some(code), None) => format!("the server answered {code}"),
            _ => text.clone(),
        };
        let refused = matches!(
            error,
            object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. }
        ) || code.is_some_and(|code| REFUSED_CODES.contains(&code));
        if code == Some("NoSuchBucket") {
            ObjectStorageError::NoBucket {
                endpoint: self.endpoint.clone(),
                bucket: self.bucket.clone(),
            }
        } else if refused {
            ObjectStorageError::Refused {
                endpoint: self.endpoint.clone(),
                bucket: self.bucket.clone(),
                detail,
            }
        } else {
            ObjectStorageError::Unreachable {
                endpoint: self.endpoint.clone(),
                detail,
            }
        }
    }
}

/// The error's text followed by each cause it does not already show, so
/// "error sending request" goes on to say "Connection refused".
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let line = inner.to_string();
        if !text.contains(&line) {
            text = format!("{text}: {line}");
        }
        cause = inner.source();
    }
    text
}

/// S3 error codes that mean the keys (or their rights) are wrong.
const REFUSED_CODES: &[&str] = &[
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidToken",
    "ExpiredToken",
    "AuthorizationHeaderMalformed",
];

/// The text of the first `<name>…</name>` in an S3 error body.
fn xml_field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&format!("</{name}>"))? + start;
    Some(text[start..end].trim())
}

/// `text` with every non-empty key replaced by `<redacted>`: servers may
/// echo the access key id, and no client error may carry the secret.
fn scrub(text: &str, keys: &[String]) -> String {
    keys.iter()
        .filter(|key| !key.is_empty())
        .fold(text.to_owned(), |text, key| {
            text.replace(key.as_str(), "<redacted>")
        })
}

#[async_trait]
impl ObjectBackend for S3Objects {
    fn location(&self) -> String {
        format!(
            "S3 bucket {} at {} (prefix {:?})",
            self.bucket, self.endpoint, self.prefix
        )
    }

    async fn check(&self) -> Result<(), ObjectStorageError> {
        // A listing names the bucket itself, so a missing bucket is told
        // apart from a missing object, and it needs the keys to be accepted.
        let prefix = Path::from(self.prefix.as_str());
        match self.store.list_with_delimiter(Some(&prefix)).await {
            Ok(_) => Ok(()),
            // A listing of a missing prefix is empty, not an error: a 404
            // can only be the bucket.
            Err(object_store::Error::NotFound { .. }) => Err(ObjectStorageError::NoBucket {
                endpoint: self.endpoint.clone(),
                bucket: self.bucket.clone(),
            }),
            Err(e) => Err(self.error(e)),
        }
    }

    async fn put(&self, hex: &str, data: &[u8]) -> Result<(), ObjectStorageError> {
        let payload = PutPayload::from(data.to_vec());
        self.store
            .put(&self.key(hex), payload)
            .await
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    async fn get(&self, hex: &str) -> Result<Option<Vec<u8>>, ObjectStorageError> {
        let result = match self.store.get(&self.key(hex)).await {
            Ok(result) => result,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.error(e)),
        };
        let bytes = result.bytes().await.map_err(|e| self.error(e))?;
        Ok(Some(bytes.into()))
    }

    async fn exists(&self, hex: &str) -> Result<bool, ObjectStorageError> {
        match self.store.head(&self.key(hex)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.error(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use levers9_config::Secret;

    use super::*;

    fn config() -> WorkspaceStorageConfig {
        WorkspaceStorageConfig {
            endpoint: "http://127.0.0.1:1/".into(),
            bucket: "code".into(),
            prefix: "/a//b".into(),
            access_key_id: Secret::new("AKIDUNITTEST"),
            secret_access_key: Secret::new("unit-test-secret"),
            ..WorkspaceStorageConfig::default()
        }
    }

    #[test]
    fn keys_are_prefixed_digests_and_debug_shows_no_key() {
        let objects = S3Objects::new(&config()).unwrap();
        assert_eq!(objects.key("ab").as_ref(), "a/b/sha256/ab");
        let debug = format!("{objects:?}");
        assert!(!debug.contains("unit-test-secret"), "{debug}");
        assert!(!debug.contains("AKIDUNITTEST"), "{debug}");
        assert!(debug.contains("127.0.0.1:1"), "{debug}");
    }

    #[test]
    fn scrub_removes_both_keys() {
        let keys = ["AKID".to_owned(), "s3cr3t".to_owned()];
        assert_eq!(
            scrub("bad AKID with s3cr3t", &keys),
            "bad <redacted> with <redacted>"
        );
        assert_eq!(
            scrub("empty keys are skipped", &[String::new()]),
            "empty keys are skipped"
        );
    }

    #[test]
    fn s3_error_codes_decide_the_kind_of_error() {
        let objects = S3Objects::new(&config()).unwrap();
        let body = |code: &str| object_store::Error::Generic {
            store: "S3",
            source: format!(
                "403: <?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>no AKIDUNITTEST \
                 here</Message></Error>"
            )
            .into(),
        };
        let refused = objects.error(body("SignatureDoesNotMatch"));
        assert!(
            matches!(refused, ObjectStorageError::Refused { .. }),
            "{refused:?}"
        );
        let text = refused.to_string();
        assert!(
            text.contains("the server answered SignatureDoesNotMatch: no <redacted> here"),
            "{text}"
        );
        assert!(matches!(
            objects.error(body("NoSuchBucket")),
            ObjectStorageError::NoBucket { .. }
        ));
        assert!(matches!(
            objects.error(body("SlowDown")),
            ObjectStorageError::Unreachable { .. }
        ));
    }

    #[tokio::test]
    async fn an_endpoint_that_is_not_there_says_what_to_check() {
        let objects = S3Objects::new(&config()).unwrap();
        let error = objects.check().await.unwrap_err().to_string();
        eprintln!("what the operator reads: {error}");
        assert!(
            error.starts_with("cannot reach the object storage at http://127.0.0.1:1:"),
            "{error}"
        );
        assert!(error.ends_with("check storage.workspace"), "{error}");
        assert!(
            error.contains("Connection refused"),
            "the cause is told: {error}"
        );
        assert!(!error.contains("unit-test-secret"), "{error}");
    }
}
