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
/// Parsing follows the grammar and the Docker conventions of the
/// distribution project's `reference` package, which `oci-client` parses
/// with too: a name without a registry means Docker Hub and a name without
/// tag or digest means `:latest`. Once a tag has been resolved, [`ImageReference::with_digest`]
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
    ///
    /// By hand rather than with `oci-client`'s parser (oci-spec's
    /// `Reference`): that one matches a regex whose `\w` is Unicode, which
    /// compiles into 5.4 MB of automata that stay for the life of the
    /// process (20 MB while being built), most of what a worker kept after
    /// its first pull. The grammar is the same, except that a tag is ASCII,
    /// as registries require.
    pub fn parse(s: &str) -> Result<Self> {
        let invalid = |reason: String| ImageError::InvalidReference {
            reference: s.to_owned(),
            reason,
        };
        if s.is_empty() {
            return Err(invalid(
                "repository name must have at least one component".to_owned(),
            ));
        }
        let (rest, digest) = match s.split_once('@') {
            Some((rest, d)) => (
                rest,
                Some(Digest::parse(d).map_err(|e| invalid(e.to_string()))?),
            ),
            None => (s, None),
        };
        // A colon after the last slash starts the tag; one before it is the
        // registry's port.
        let (name, tag) = match rest.rfind(':') {
            Some(i) if !rest[i..].contains('/') => (&rest[..i], Some(&rest[i + 1..])),
            _ => (rest, None),
        };
        if !is_name(name) || !tag.is_none_or(is_tag) {
            return Err(invalid("invalid reference format".to_owned()));
        }
        let (registry, repository) = split_domain(name);
        if repository.len() > MAX_REPOSITORY_LEN {
            return Err(invalid(format!(
                "repository name must not be more than {MAX_REPOSITORY_LEN} characters"
            )));
        }
        let inner = match (tag, &digest) {
            (Some(tag), Some(d)) => oci_client::Reference::with_tag_and_digest(
                registry,
                repository,
                tag.to_owned(),
                d.to_string(),
            ),
            (None, Some(d)) => {
                oci_client::Reference::with_digest(registry, repository, d.to_string())
            }
            (tag, None) => oci_client::Reference::with_tag(
                registry,
                repository,
                tag.unwrap_or(DEFAULT_TAG).to_owned(),
            ),
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

const DEFAULT_TAG: &str = "latest";
const DOCKER_HUB: &str = "docker.io";
const MAX_REPOSITORY_LEN: usize = 255;

/// `[domain/]path[/path]...`: the first part is the registry when it looks
/// like a domain and more parts follow (which part really is the registry is
/// [`split_domain`]'s choice, as in the distribution project).
fn is_name(name: &str) -> bool {
    let mut parts = name.split('/');
    let first = parts.next().unwrap_or_default();
    let mut rest = parts.peekable();
    let more = rest.peek().is_some();
    (is_path_component(first) || (more && is_domain(first))) && rest.all(is_path_component)
}

/// `[a-z0-9]+` runs joined by `.`, `_`, `__` or any number of `-`.
fn is_path_component(part: &str) -> bool {
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = part.as_bytes();
    bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && part
            .split(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            .all(|sep| matches!(sep, "." | "_" | "__") || sep.bytes().all(|b| b == b'-'))
}

/// `label[.label]...[:port]`, a label being letters, digits and inner `-`.
fn is_domain(domain: &str) -> bool {
    let (host, port) = match domain.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (domain, None),
    };
    let is_label = |label: &str| {
        let bytes = label.as_bytes();
        bytes.first().is_some_and(u8::is_ascii_alphanumeric)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
    };
    port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && host.split('.').all(is_label)
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
fn is_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    tag.len() <= 128
        && tag.bytes().next().is_some_and(word)
        && tag.bytes().all(|b| word(b) || b == b'.' || b == b'-')
}

/// Registry and repository of a valid name: the first part is the registry
/// if it has a `.`, a `:` or capitals (a repository has none) or is
/// `localhost`, Docker Hub otherwise, whose one-part names are under
/// `library/`.
fn split_domain(name: &str) -> (String, String) {
    // Capitals too, as the distribution project splits: oci-spec does not
    // (a FIXME there), and took `Team/app` for the Docker Hub repository
    // `Team/app`, which pinned to a digest did not parse back (found by the
    // image_reference fuzz target).
    let is_registry = |first: &str| {
        first.contains(['.', ':'])
            || first == "localhost"
            || first.bytes().any(|b| b.is_ascii_uppercase())
    };
    let (registry, repository) = match name.split_once('/') {
        Some((first, rest)) if is_registry(first) => (first, rest),
        _ => (DOCKER_HUB, name),
    };
    let registry = if registry == "index.docker.io" {
        DOCKER_HUB
    } else {
        registry
    };
    let repository = if registry == DOCKER_HUB && !repository.contains('/') {
        format!("library/{repository}")
    } else {
        repository.to_owned()
    };
    (registry.to_owned(), repository)
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

    /// The hand parser against oci-spec's regex on the distribution
    /// project's cases and more: the same references accepted, read the
    /// same way (digests other than sha256 are refused by both, ours by
    /// `Digest`).
    #[test]
    fn references_parse_as_oci_spec_parses_them() {
        let d = format!("sha256:{}", "f".repeat(64));
        let long = "a".repeat(256);
        let inputs = [
            "busybox".to_owned(),
            "test.com:tag".to_owned(),
            "test.com:5000".to_owned(),
            "test.com/repo:tag".to_owned(),
            "test:5000/repo".to_owned(),
            "test:5000/repo:tag".to_owned(),
            format!("test:5000/repo@{d}"),
            format!("test:5000/repo:tag@{d}"),
            "lowercase:Uppercase".to_owned(),
            "sub-dom1.foo.com/bar/baz/quux:some-long-tag".to_owned(),
            "b.gcr.io/test.example.com/my-app:test.example.com".to_owned(),
            "xn--n3h.com/myimage:xn--n3h.com".to_owned(),
            "foo_bar.com:8080".to_owned(),
            "foo/foo_bar.com:8080".to_owned(),
            "opensuse/leap:15.3".to_owned(),
            "index.docker.io/busybox".to_owned(),
            "localhost/x".to_owned(),
            "localhost:5000/a/b:v_1.2-rc".to_owned(),
            "127.0.0.1:5000/levers9/python:3.11".to_owned(),
            "a/b__c/d---e/f.g/h_i".to_owned(),
            format!("x:{}", "t".repeat(128)),
            format!("x:{}", "t".repeat(129)),
            format!("{long}:tag"),
            format!("a/{}", "b".repeat(254)),
            String::new(),
            ":justtag".to_owned(),
            format!("@{d}"),
            "repo@sha256:ffff".to_owned(),
            "Uppercase:tag".to_owned(),
            "test:5000/Uppercase/lowercase:tag".to_owned(),
            "aa/asdf$$^/aa".to_owned(),
            "a/b___c".to_owned(),
            "a/b._c".to_owned(),
            "a/-b".to_owned(),
            "a/b-".to_owned(),
            "a//b".to_owned(),
            "a/".to_owned(),
            "-a.com/b".to_owned(),
            "a.com:/b".to_owned(),
            "a.com:50x/b".to_owned(),
            "x:.tag".to_owned(),
            "x:-tag".to_owned(),
            "x:".to_owned(),
            "x:a:b".to_owned(),
            "x\n".to_owned(),
            "has space/x".to_owned(),
        ];
        for input in inputs {
            let ours = ImageReference::parse(&input).ok().map(|r| r.inner);
            let theirs = oci_client::Reference::try_from(input.as_str()).ok();
            assert_eq!(ours, theirs, "{input:?}");
        }
        // Where they differ: a tag is ASCII (regex's Unicode `\w` took any letter).
        assert!(oci_client::Reference::try_from("x:tagé").is_ok());
        assert!(ImageReference::parse("x:tagé").is_err());
        // And a first part with capitals is a registry, as the distribution
        // project has it (oci-spec: the Docker Hub repository Uppercase/lowercase).
        let r = ImageReference::parse("Uppercase/lowercase:tag").unwrap();
        assert_eq!((r.registry(), r.repository()), ("Uppercase", "lowercase"));
    }

    #[test]
    fn a_reference_pinned_to_a_digest_parses_back() {
        let d = Digest::parse(&format!("sha256:{}", "0".repeat(64))).unwrap();
        // "Tbusm/app:vy" is what the image_reference fuzz target found: it
        // was read as docker.io/Tbusm/app, whose pinned form did not parse.
        for input in [
            "Tbusm/app:vy",
            "busybox",
            "localhost:5000/a/b:v1",
            "Reg.Example.com/a",
        ] {
            let r = ImageReference::parse(input).unwrap();
            let pinned = r.with_digest(&d);
            let again = ImageReference::parse(&pinned.to_string())
                .unwrap_or_else(|e| panic!("{input:?} pinned as {pinned}: {e}"));
            assert_eq!(again, pinned, "{input:?}");
            assert_eq!(
                (again.registry(), again.repository()),
                (r.registry(), r.repository()),
                "{input:?}"
            );
        }
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
