//! Inline secrets (the SDK's `Secret.from_dict`): values given with a
//! function rather than created beforehand by name. Each variable is stored
//! as an ordinary sealed secret, so sealing, key rotation, listing and the
//! path into containers are the same as for named secrets; only its stored
//! name differs from the variable a container sees.
//!
//! The stored name is `LEVERS9_INLINE_<digest>_<VARIABLE>`, where the digest
//! is keyed (see [`Keyring::keyed_digest`]) over the workspace, the variable
//! and its value: the same values always land on the same row (a second run
//! of a script stores nothing and finds its stub again), two functions with
//! different values for one variable never overwrite each other, and the
//! name says nothing about the value to someone who reads the database.
//! `LEVERS9_` names are refused by CreateSecret, so no named secret can take
//! or shadow one.

use levers9_seal::Keyring;

/// The stored names of inline secrets start with this.
pub const INLINE_PREFIX: &str = "LEVERS9_INLINE_";
/// Hex digits of the digest in a name: 96 bits, no collisions in practice.
const DIGEST_HEX: usize = 24;

/// The stored name of variable `variable` with `value` in `workspace_id`.
pub fn inline_secret_name(
    keyring: &Keyring,
    workspace_id: &str,
    variable: &str,
    value: &str,
) -> String {
    let mut data = Vec::with_capacity(workspace_id.len() + variable.len() + value.len() + 32);
    data.extend_from_slice(b"levers9 inline secret v1\0");
    data.extend_from_slice(workspace_id.as_bytes());
    data.push(0);
    data.extend_from_slice(variable.as_bytes());
    data.push(0);
    data.extend_from_slice(value.as_bytes());
    let digest = hex::encode(keyring.keyed_digest(&data));
    format!("{INLINE_PREFIX}{}_{variable}", &digest[..DIGEST_HEX])
}

/// The environment variable a secret stored as `name` becomes in a
/// container: the variable of an inline secret, else the name itself.
pub fn env_name(name: &str) -> &str {
    name.strip_prefix(INLINE_PREFIX)
        .and_then(|rest| rest.get(DIGEST_HEX..))
        .and_then(|rest| rest.strip_prefix('_'))
        .filter(|variable| !variable.is_empty())
        .unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use levers9_seal::Key;

    #[test]
    fn inline_names_map_back_to_their_variable_and_hide_the_value() {
        let ring = Keyring::new(Key::from_bytes([7; 32]), vec![]);
        let name = inline_secret_name(&ring, "ws-a", "DB_PASSWORD", "hunter2");
        assert!(name.starts_with(INLINE_PREFIX), "{name}");
        assert!(!name.contains("hunter2"));
        assert_eq!(env_name(&name), "DB_PASSWORD");
        assert_eq!(
            name,
            inline_secret_name(&ring, "ws-a", "DB_PASSWORD", "hunter2")
        );
        assert_ne!(
            name,
            inline_secret_name(&ring, "ws-b", "DB_PASSWORD", "hunter2")
        );
        assert_ne!(
            name,
            inline_secret_name(&ring, "ws-a", "DB_PASSWORD", "hunter3")
        );
        assert_eq!(env_name("DB_PASSWORD"), "DB_PASSWORD");
        assert_eq!(env_name("LEVERS9_INLINE_short"), "LEVERS9_INLINE_short");
    }
}
