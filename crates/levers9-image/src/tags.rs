//! Tags resolved to digests, reused for a while: a burst of cold starts of
//! one image (a map scaling up) asks the registry once, not once a
//! container. Resolving is a round trip to the registry, a few ms on a
//! local one and tens of ms to a cloud registry, on every cold start's path.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use levers9_sync::Lock;

use crate::reference::{Digest, ImageReference};

/// Digests of tags resolved less than `ttl` ago.
pub(crate) struct ResolvedTags {
    ttl: Duration,
    digests: Lock<HashMap<String, (Digest, Instant)>>,
}

impl ResolvedTags {
    pub(crate) fn new(ttl: Duration) -> Self {
        ResolvedTags {
            ttl,
            digests: Lock::new(HashMap::new()),
        }
    }

    /// The digest `tag` was resolved to, if that was less than the TTL ago.
    pub(crate) fn get(&self, tag: &ImageReference) -> Option<Digest> {
        let digests = self.digests.lock();
        let (digest, at) = digests.get(&tag.to_string())?;
        (at.elapsed() < self.ttl).then(|| digest.clone())
    }

    /// Remembers what `tag` was just resolved to.
    pub(crate) fn put(&self, tag: &ImageReference, digest: &Digest) {
        if self.ttl.is_zero() {
            return;
        }
        let mut digests = self.digests.lock();
        // Stale entries go when a new one comes: the map holds at most the
        // tags of the last TTL.
        digests.retain(|_, (_, at)| at.elapsed() < self.ttl);
        digests.insert(tag.to_string(), (digest.clone(), Instant::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag() -> ImageReference {
        ImageReference::parse("registry.example/team/app:v1").unwrap()
    }

    fn digest(c: char) -> Digest {
        Digest::parse(&format!("sha256:{}", c.to_string().repeat(64))).unwrap()
    }

    #[test]
    fn a_digest_is_reused_until_its_ttl_has_passed() {
        let tags = ResolvedTags::new(Duration::from_millis(20));
        assert_eq!(tags.get(&tag()), None);
        tags.put(&tag(), &digest('a'));
        assert_eq!(tags.get(&tag()), Some(digest('a')));
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(tags.get(&tag()), None, "past its TTL");
        tags.put(&tag(), &digest('b'));
        assert_eq!(tags.get(&tag()), Some(digest('b')));
    }

    #[test]
    fn a_zero_ttl_keeps_nothing() {
        let tags = ResolvedTags::new(Duration::ZERO);
        tags.put(&tag(), &digest('a'));
        assert_eq!(tags.get(&tag()), None);
    }
}
