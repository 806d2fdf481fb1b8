//! Image references (`registry/repository[:tag][@digest]`) and sha256 digests.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::error::{ImageError, Result};

/// A sha256 content digest, `sha256:<64 lowercase hex>`.
///
/// Only sha256 is supported: it is what every registry and builder produces,
/// and accepting one algorithm keeps the cache layout (`.../sha256/<hex>`)
/// and the verification code single-path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Digest(String);

impl Digest {
    /// Parses `sha256:<64 lowercase hex>`.
    pub fn parse(s: &str) -> Result<Self> {
        let ok = s.strip_prefix("sha256:").is_some_and(|hex| {
            hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
        if ok {
            Ok(Digest(s.to_owned()))
        } else {
            Err(ImageError::InvalidDigest {
                digest: s.to_owned(),
            })
        }
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self::from_hasher(Sha256::new_with_prefix(bytes))
    }

    /// The digest accumulated in `hasher`.
    pub(crate) fn from_hasher(hasher: Sha256) -> Self {
        Digest(format!("sha256:{}", hex::encode(hasher.finalize())))
    }

    /// The 64 hex characters, as used for file names in the cache.
    pub fn hex(&self) -> &str {
        // The constructor guarantees the prefix; fall back to the whole
        // string rather than panic.
        self.0.strip_prefix("sha256:").unwrap_or(&self.0)
    }

    /// The full `sha256:<hex>` form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Digest {
    type Error = ImageError;
    fn try_from(s: String) -> Result<Self> {
        Digest::parse(&s)
    }
}

impl From<Digest> for String {
    fn from(d: Digest) -> String {
        d.0
    }
}

/// A parsed image reference such as `127.0.0.1:5000/levers9/busybox@sha256:…`
/// or `registry.example.com/team/app:v3`.
///
/// Parsing follows the Docker conventions (via `oci-client`): a name without
/// a registry means Docker Hub and a name without tag or digest means
/// `:latest`. Once a tag has been resolved, [`ImageReference::with_digest`]
/// pins the reference so that every later request names the exact content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ImageReference {
    text: String,
    digest: Option<Digest>,
    inner: oci_client::Reference,
}

impl ImageReference {
    /// Parses a reference.
    pub fn parse(s: &str) -> Result<Self> {
        let invalid = |reason: String| ImageError::InvalidReference {
            reference: s.to_owned(),
            reason,
        };
        let inner: oci_client::Reference = s.parse().map_err(|e| invalid(format!("{e}")))?;
        let digest = match inner.digest() {
            Some(d) => Some(Digest::parse(d).map_err(|e| invalid(e.to_string()))?),
            None => None,
        };
        Ok(ImageReference {
            text: s.to_owned(),
            digest,
            inner,
        })
    }

    /// The registry as written, e.g. `127.0.0.1:5000` or `docker.io`.
    pub fn registry(&self) -> &str {
        self.inner.registry()
    }

    /// The repository, e.g. `levers9/busybox`.
    pub fn repository(&self) -> &str {
        self.inner.repository()
    }

    /// The tag, if one was given.
    pub fn tag(&self) -> Option<&str> {
        self.inner.tag()
    }

    /// The digest, if one was given.
    pub fn digest(&self) -> Option<&Digest> {
        self.digest.as_ref()
    }

    /// The same repository, pinned to `digest` (the tag is dropped: the
    /// digest is what identifies the content from now on).
    pub fn with_digest(&self, digest: &Digest) -> ImageReference {
        let inner = oci_client::Reference::with_digest(
            self.inner.registry().to_owned(),
            self.inner.repository().to_owned(),
            digest.as_str().to_owned(),
        );
        ImageReference {
            text: inner.whole(),
            digest: Some(digest.clone()),
            inner,
        }
    }

    /// Whether the registry is on this machine (127.0.0.0/8, ::1, localhost),
    /// the only case where plain HTTP is used without being configured.
    pub fn is_loopback_registry(&self) -> bool {
        is_loopback_host(self.registry())
    }

    pub(crate) fn oci(&self) -> &oci_client::Reference {
        &self.inner
    }
}

impl fmt::Display for ImageReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl TryFrom<String> for ImageReference {
    type Error = ImageError;
    fn try_from(s: String) -> Result<Self> {
        ImageReference::parse(&s)
    }
}

impl From<ImageReference> for String {
    fn from(r: ImageReference) -> String {
        r.text
    }
}

/// Whether `registry` (`host`, `host:port`, `[v6]:port`) names this machine.
pub fn is_loopback_host(registry: &str) -> bool {
    let host = if let Some(rest) = registry.strip_prefix('[') {
        rest.split(']').next().unwrap_or(rest)
    } else {
        match registry.rsplit_once(':') {
            Some((h, port)) if !h.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => registry,
        }
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_checked() {
        let hex = "a".repeat(64);
        assert_eq!(Digest::parse(&format!("sha256:{hex}")).unwrap().hex(), hex);
        assert!(Digest::parse("sha256:abc").is_err());
        assert!(Digest::parse(&format!("sha512:{hex}")).is_err());
        assert!(Digest::parse(&format!("sha256:{}", "A".repeat(64))).is_err());
        assert_eq!(
            Digest::of(b"").as_str(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn references_parse() {
        let d = format!("sha256:{}", "0".repeat(64));
        let r = ImageReference::parse(&format!("127.0.0.1:5000/levers9/busybox@{d}")).unwrap();
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "levers9/busybox");
        assert_eq!(r.digest().unwrap().as_str(), d);
        assert!(r.is_loopback_registry());

        let r = ImageReference::parse("registry.example.com/a/b:v1").unwrap();
        assert_eq!(r.tag(), Some("v1"));
        assert!(r.digest().is_none());
        assert!(!r.is_loopback_registry());
        let pinned = r.with_digest(&Digest::parse(&d).unwrap());
        assert_eq!(pinned.to_string(), format!("registry.example.com/a/b@{d}"));

        assert!(ImageReference::parse("has space/x").is_err());
        assert!(ImageReference::parse("").is_err());
        assert!(ImageReference::parse("x@sha256:short").is_err());
    }

    #[test]
    fn loopback_hosts() {
        for h in [
            "127.0.0.1:5000",
            "127.3.2.1",
            "localhost:80",
            "LOCALHOST",
            "[::1]:5000",
            "::1",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in [
            "10.0.0.1:5000",
            "example.com",
            "localhost.example.com:5000",
            "[::2]:1",
        ] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }
}
