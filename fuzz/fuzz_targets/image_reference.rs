//! Image references and digests as users and registries write them.
//!
//! Beyond never panicking: a parsed reference prints as it was written and
//! parses back to itself (also through serde, as it is stored), and pinning
//! it to a digest makes a reference that parses back to the same registry,
//! repository and digest (the worker pulls what the controlplane pinned).

#![no_main]

use levers9_image::{is_loopback_host, Digest, ImageReference};
use libfuzzer_sys::fuzz_target;

/// A digest every pin below uses; its value does not matter.
const PIN: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(digest) = Digest::parse(text) {
        assert_eq!(digest.as_str(), text);
        assert_eq!(digest.hex().len(), 64);
    }
    is_loopback_host(text);
    let Ok(reference) = ImageReference::parse(text) else {
        return;
    };
    assert_eq!(reference.to_string(), text);
    assert_eq!(ImageReference::parse(text).ok().as_ref(), Some(&reference));
    let stored = serde_json::to_string(&reference).expect("a reference serialises");
    let loaded: ImageReference = serde_json::from_str(&stored).expect("a stored reference loads");
    assert_eq!(loaded, reference);
    is_loopback_host(reference.registry());

    let pin = Digest::parse(PIN).expect("PIN is a digest");
    let pinned = reference.with_digest(&pin);
    let reparsed = ImageReference::parse(&pinned.to_string())
        .unwrap_or_else(|e| panic!("{text:?} pinned as {pinned} does not parse: {e}"));
    assert_eq!(reparsed.registry(), reference.registry(), "{pinned}");
    assert_eq!(reparsed.repository(), reference.repository(), "{pinned}");
    assert_eq!(reparsed.digest(), Some(&pin), "{pinned}");
});
