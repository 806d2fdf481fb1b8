//! Identifiers that cross crates (controlplane, worker, runtime, image),
//! checked in one place so the crates cannot disagree on what is valid.
#![forbid(unsafe_code)]

use std::borrow::Borrow;
use std::fmt;
use std::path::Path;

/// The most bytes a container id may have.
///
/// Why 64: an id names a runc/runsc container, its bundle directory, its
/// cgroup and its overlay directory, and appears in mount options. The
/// record store keeps ids as `TEXT` (no limit) and the controlplane mints
/// 34-byte ones (`c-` and a UUID's 32 hex digits); 64 is what the runtime
/// always accepted, so it is the limit for every crate.
pub const CONTAINER_ID_MAX_BYTES: usize = 64;

/// A container's id: 1 to [`CONTAINER_ID_MAX_BYTES`] of `[A-Za-z0-9_.-]`,
/// starting with a letter or digit, so it is safe as a file name (never `.`
/// or `..`), in a mount option (no `,` or `:`) and as a cgroup name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContainerId(String);

/// An id that is not a valid [`ContainerId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid container id {0:?}: use 1-64 of [A-Za-z0-9_.-], starting with a letter or digit")]
pub struct InvalidContainerId(pub String);

impl ContainerId {
    /// `id` if it is valid.
    pub fn parse(id: impl Into<String>) -> Result<Self, InvalidContainerId> {
        let id = id.into();
        if Self::is_valid(&id) {
            Ok(Self(id))
        } else {
            Err(InvalidContainerId(id))
        }
    }

    /// Whether `id` is a valid container id.
    pub fn is_valid(id: &str) -> bool {
        let mut bytes = id.bytes();
        matches!(bytes.next(), Some(b) if b.is_ascii_alphanumeric())
            && id.len() <= CONTAINER_ID_MAX_BYTES
            && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ContainerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ContainerId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// An id is a plain file name (no `/`, never `.` or `..`), so it can be
/// joined to a directory: `bundles.join(&id)` stays inside `bundles`.
impl AsRef<Path> for ContainerId {
    fn as_ref(&self) -> &Path {
        Path::new(&self.0)
    }
}

/// Maps keyed by id can be asked with an id as it came off the wire, without
/// parsing it first: one that is not valid is simply not found. Sound because
/// `Hash`, `Eq` and `Ord` are derived from the inner `String`'s, which agree
/// with `str`'s.
impl Borrow<str> for ContainerId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ContainerId {
    type Error = InvalidContainerId;

    fn try_from(id: String) -> Result<Self, Self::Error> {
        Self::parse(id)
    }
}

impl From<ContainerId> for String {
    fn from(id: ContainerId) -> Self {
        id.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_the_controlplane_mints_and_the_longest_allowed_are_valid() {
        for ok in [
            "c-0190f3a2b4c5d6e7f8091a2b3c4d5e6f",
            "c1",
            "abc-DEF_1.2",
            &"x".repeat(64),
        ] {
            assert_eq!(ContainerId::parse(ok).unwrap().as_str(), ok);
        }
    }

    #[test]
    fn ids_that_could_escape_a_directory_or_a_mount_option_are_refused() {
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "-flag",
            "_x",
            "a/b",
            "a,b",
            "a:b",
            "a b",
            "é",
            &"x".repeat(65),
        ] {
            assert_eq!(
                ContainerId::parse(bad),
                Err(InvalidContainerId(bad.to_owned())),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_map_keyed_by_id_is_found_by_the_ids_text() {
        let id = ContainerId::parse("c1").unwrap();
        let map = std::collections::HashMap::from([(id.clone(), 1)]);
        assert_eq!(map.get("c1"), Some(&1));
        assert_eq!(map.get("a/b"), None);
        assert_eq!(AsRef::<Path>::as_ref(&id), Path::new("c1"));
        assert_eq!(id.to_string(), "c1");
    }

    #[test]
    fn the_refusal_says_what_is_allowed() {
        assert_eq!(
            ContainerId::parse("a/b").unwrap_err().to_string(),
            "invalid container id \"a/b\": use 1-64 of [A-Za-z0-9_.-], starting with a letter or digit"
        );
    }
}
