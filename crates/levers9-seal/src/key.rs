//! One encryption key and its public id.

use std::fmt;

use base64::Engine;
use sha2::{Digest, Sha256};

/// Length of an AES-256 key.
const KEY_LEN: usize = 32;

/// Why a configured key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Not base64, or not 32 bytes. The message never repeats the value.
    #[error(
        "{key} must be the base64 of 32 random bytes ({problem}): make one with \
         `head -c 32 /dev/urandom | base64`"
    )]
    Malformed {
        /// Which config key held it.
        key: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// The public name of a key: derived from it by a one-way hash, so it can be
/// stored beside every value and printed in logs without revealing the key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(String);

impl KeyId {
    /// An id as stored, e.g. `k3f2a…` (from a database row).
    pub fn from_stored(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An AES-256 key. Its `Debug` shows only its id.
#[derive(Clone)]
pub struct Key {
    bytes: [u8; KEY_LEN],
    id: KeyId,
}

impl Key {
    /// Parses the base64 text of a config value; `config_key` names the
    /// setting in errors.
    pub fn from_base64(text: &str, config_key: &str) -> Result<Key, KeyError> {
        let malformed = |problem: &str| KeyError::Malformed {
            key: config_key.to_owned(),
            problem: problem.to_owned(),
        };
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|_| malformed("it is not base64"))?;
        let bytes: [u8; KEY_LEN] = decoded
            .try_into()
            .map_err(|v: Vec<u8>| malformed(&format!("it decodes to {} bytes", v.len())))?;
        Ok(Key::from_bytes(bytes))
    }

    /// A key from raw bytes.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Key {
        let mut hasher = Sha256::new();
        hasher.update(b"levers9 key id v1\0");
        hasher.update(bytes);
        let digest = hasher.finalize();
        let id = KeyId(format!("k{}", hex::encode(&digest[..8])));
        Key { bytes, id }
    }

    /// This key's id.
    pub fn id(&self) -> &KeyId {
        &self.id
    }

    pub(crate) fn bytes(&self) -> &[u8; KEY_LEN] {
        &self.bytes
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({})", self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ids_are_stable_and_reveal_nothing() {
        let text = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        let a = Key::from_base64(&text, "k").expect("valid");
        let b = Key::from_base64(&text, "k").expect("valid");
        assert_eq!(a.id(), b.id());
        assert_eq!(a.id().as_str().len(), 17);
        assert!(!a.id().as_str().contains(&hex::encode([7u8; 4])));
        assert_eq!(format!("{a:?}"), format!("Key({})", a.id()));
    }

    #[test]
    fn malformed_keys_say_what_is_wrong_without_the_value() {
        let short = base64::engine::general_purpose::STANDARD.encode([1u8; 16]);
        let error = Key::from_base64(&short, "database.postgres.encryptionKey")
            .expect_err("too short")
            .to_string();
        assert!(error.contains("decodes to 16 bytes"), "{error}");
        assert!(error.contains("database.postgres.encryptionKey"), "{error}");
        assert!(!error.contains(&short));
        let error = Key::from_base64("not base64!", "k")
            .expect_err("bad")
            .to_string();
        assert!(error.contains("not base64"), "{error}");
    }
}
