//! The current key and the previous ones: seal with the current, open with
//! whichever key a value names.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::key::{Key, KeyId};

/// GCM's standard nonce length. Nonces are random: at 2^32 values per key
/// the chance of a repeat stays below 2^-32, far beyond what one install
/// seals before its key is rotated.
const NONCE_LEN: usize = 12;

/// A sealed value as stored: the id of the key that sealed it, and the
/// nonce followed by the ciphertext and tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    /// Which key sealed it.
    pub key_id: KeyId,
    /// nonce || ciphertext || tag.
    pub bytes: Vec<u8>,
}

/// Why a sealed value did not open.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OpenError {
    /// Sealed with a key this controlplane was not given.
    #[error(
        "the value was sealed with key {0}, which is neither database.postgres.encryptionKey \
         nor in database.postgres.previousEncryptionKeys: add that key back to \
         previousEncryptionKeys (nothing was changed)"
    )]
    UnknownKey(KeyId),
    /// The key is known but the value does not verify: it was altered, or
    /// belongs to another row.
    #[error(
        "the value sealed with key {0} does not verify: it was altered or copied from another \
         row (nothing was changed)"
    )]
    Tampered(KeyId),
}

/// The keys of one controlplane.
#[derive(Debug, Clone)]
pub struct Keyring {
    current: Key,
    previous: Vec<Key>,
}

impl Keyring {
    /// `current` seals; `previous` still open what they sealed.
    pub fn new(current: Key, previous: Vec<Key>) -> Self {
        Self { current, previous }
    }

    /// The id of the key new values are sealed with.
    pub fn current_id(&self) -> &KeyId {
        self.current.id()
    }

    /// Seals `plaintext`, bound to `aad` (the row it belongs to).
    pub fn seal(&self, aad: &[u8], plaintext: &[u8]) -> Sealed {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let cipher = cipher(&self.current);
        let payload = Payload {
            msg: plaintext,
            aad,
        };
        // Encryption fails only for messages beyond GCM's 64 GiB limit, far
        // past anything a row holds; treat it as the invariant it is.
        let ciphertext = cipher
            .encrypt(Nonce::from_slice(&nonce), payload)
            .unwrap_or_else(|_| unreachable!("AES-GCM refused a message under 64 GiB"));
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&ciphertext);
        Sealed {
            key_id: self.current.id().clone(),
            bytes,
        }
    }

    /// HMAC-SHA256 of `data` under a key derived from the current key, for
    /// names that must be stable for the same content yet tell a database
    /// reader nothing about it (a plain hash of a weak value can be
    /// guessed). It changes when the current key does.
    pub fn keyed_digest(&self, data: &[u8]) -> [u8; 32] {
        // A subkey, so the AES key itself is never used as a MAC key.
        let subkey: [u8; 32] = Sha256::new()
            .chain_update(b"levers9 keyed digest v1\0")
            .chain_update(self.current.bytes())
            .finalize()
            .into();
        hmac_sha256(&subkey, data)
    }

    /// Opens a value sealed by any key of the ring, checking it belongs to `aad`.
    pub fn open(&self, aad: &[u8], sealed: &Sealed) -> Result<Vec<u8>, OpenError> {
        let key = std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|k| *k.id() == sealed.key_id)
            .ok_or_else(|| OpenError::UnknownKey(sealed.key_id.clone()))?;
        let tampered = || OpenError::Tampered(sealed.key_id.clone());
        if sealed.bytes.len() < NONCE_LEN {
            return Err(tampered());
        }
        let (nonce, ciphertext) = sealed.bytes.split_at(NONCE_LEN);
        let payload = Payload {
            msg: ciphertext,
            aad,
        };
        cipher(key)
            .decrypt(Nonce::from_slice(nonce), payload)
            .map_err(|_| tampered())
    }
}

/// RFC 2104 HMAC over SHA-256 with a 32-byte key (shorter than the block,
/// so it is zero-padded rather than hashed).
fn hmac_sha256(key: &[u8; 32], data: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut inner_pad = [0x36u8; BLOCK];
    let mut outer_pad = [0x5cu8; BLOCK];
    for (i, byte) in key.iter().enumerate() {
        inner_pad[i] ^= byte;
        outer_pad[i] ^= byte;
    }
    let inner = Sha256::new()
        .chain_update(inner_pad)
        .chain_update(data)
        .finalize();
    Sha256::new()
        .chain_update(outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

fn cipher(key: &Key) -> Aes256Gcm {
    Aes256Gcm::new(key.bytes().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> Key {
        Key::from_bytes([byte; 32])
    }

    #[test]
    fn sealed_values_open_with_their_row_only() {
        let ring = Keyring::new(key(1), vec![]);
        let sealed = ring.seal(b"secret/ws-a/DB_PASSWORD", b"hunter2");
        assert_eq!(sealed.key_id, *key(1).id());
        assert!(!sealed.bytes.windows(7).any(|w| w == b"hunter2"));
        assert_eq!(
            ring.open(b"secret/ws-a/DB_PASSWORD", &sealed)
                .expect("opens"),
            b"hunter2"
        );
        let swapped = ring.open(b"secret/ws-b/DB_PASSWORD", &sealed);
        assert_eq!(swapped, Err(OpenError::Tampered(key(1).id().clone())));
    }

    #[test]
    fn keyed_digests_are_hmac_sha256_and_follow_the_current_key() {
        // RFC 4231 test case 2: key "Jefe" (zero-padded like our 32-byte keys).
        let mut jefe = [0u8; 32];
        jefe[..4].copy_from_slice(b"Jefe");
        assert_eq!(
            hex::encode(hmac_sha256(&jefe, b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let ring = Keyring::new(key(1), vec![]);
        assert_eq!(ring.keyed_digest(b"a"), ring.keyed_digest(b"a"));
        assert_ne!(ring.keyed_digest(b"a"), ring.keyed_digest(b"b"));
        let rotated = Keyring::new(key(2), vec![key(1)]);
        assert_ne!(ring.keyed_digest(b"a"), rotated.keyed_digest(b"a"));
    }

    #[test]
    fn tampered_ciphertext_is_rejected() {
        let ring = Keyring::new(key(1), vec![]);
        let mut sealed = ring.seal(b"row", b"value");
        let last = sealed.bytes.len() - 1;
        sealed.bytes[last] ^= 1;
        assert!(matches!(
            ring.open(b"row", &sealed),
            Err(OpenError::Tampered(_))
        ));
        sealed.bytes.truncate(3);
        assert!(matches!(
            ring.open(b"row", &sealed),
            Err(OpenError::Tampered(_))
        ));
    }

    #[test]
    fn previous_keys_open_and_unknown_keys_are_named() {
        let old = Keyring::new(key(1), vec![]);
        let sealed = old.seal(b"row", b"value");
        let rotated = Keyring::new(key(2), vec![key(1)]);
        assert_eq!(
            rotated.open(b"row", &sealed).expect("old key opens"),
            b"value"
        );
        assert_eq!(rotated.seal(b"row", b"value").key_id, *key(2).id());
        let dropped = Keyring::new(key(2), vec![]);
        let error = dropped.open(b"row", &sealed).expect_err("unknown key");
        assert_eq!(error, OpenError::UnknownKey(key(1).id().clone()));
        assert!(error.to_string().contains(key(1).id().as_str()));
    }
}
