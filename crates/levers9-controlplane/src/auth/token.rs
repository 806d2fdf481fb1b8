//! Token secrets: how they are made and how they are stored (only as a hash).

use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// Prefix of every token secret, so leaked tokens are easy to spot and scan for.
pub const TOKEN_PREFIX: &str = "l9_";

/// A freshly made token: the secret to show once, and the hash to store.
pub struct MintedToken {
    /// Shown to the caller once, never stored.
    pub secret: String,
    /// sha256 of the secret; what the database keeps.
    pub hash: Vec<u8>,
}

/// Makes a token from 256 random bits.
pub fn mint() -> MintedToken {
    mint_with_prefix(TOKEN_PREFIX)
}

/// Makes a secret of another kind (a machine's join token) the same way.
pub fn mint_with_prefix(prefix: &str) -> MintedToken {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let secret = format!(
        "{prefix}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    let hash = hash(&secret);
    MintedToken { secret, hash }
}

/// The stored form of a token secret. A plain sha256 is enough: the secret
/// has 256 random bits, so there is nothing to brute-force, and the check
/// stays on the hot path of every call.
pub fn hash(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_tokens_are_distinct_and_hash_to_what_is_stored() {
        let a = mint();
        let b = mint();
        assert_ne!(a.secret, b.secret);
        assert!(a.secret.starts_with(TOKEN_PREFIX));
        assert_eq!(a.secret.len(), TOKEN_PREFIX.len() + 43);
        assert_eq!(hash(&a.secret), a.hash);
        assert_eq!(a.hash.len(), 32);
    }
}
