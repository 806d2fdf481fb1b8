//! Values sealed at rest: the keyring from the configuration, the binding of
//! each value to its row, and re-sealing onto the current key at start.

mod inline;
mod rotation;
mod secrets;
mod storage;

pub use inline::{env_name, inline_secret_name, INLINE_PREFIX};
pub use rotation::{rotate, RotationReport};
pub use secrets::SecretOpener;
pub use storage::{open_storage, storage_id, volume_storage};

use levers9_config::Config;
use levers9_seal::{Key, KeyError, KeyId, Keyring, OpenError, Sealed};
use levers9_store::{SealedId, SealedValue};

/// The keyring of `database.postgres.encryptionKey` and
/// `previousEncryptionKeys`.
pub fn keyring(config: &Config) -> Result<Keyring, KeyError> {
    let pg = &config.database.postgres;
    let current = Key::from_base64(
        pg.encryption_key.expose(),
        "database.postgres.encryptionKey",
    )?;
    let previous = pg
        .previous_encryption_keys
        .iter()
        .enumerate()
        .map(|(i, key)| {
            Key::from_base64(
                key.expose(),
                &format!("database.postgres.previousEncryptionKeys[{i}]"),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Keyring::new(current, previous))
}

/// What a value is bound to: a ciphertext copied to another row (another
/// workspace, name or kind) does not open there.
fn associated_data(id: &SealedId) -> Vec<u8> {
    format!(
        "levers9 sealed v1\0{}\0{}\0{}",
        id.kind.as_str(),
        id.workspace_id,
        id.name
    )
    .into_bytes()
}

/// Seals `plaintext` for row `id` with the current key.
pub fn seal(keyring: &Keyring, id: &SealedId, plaintext: &[u8]) -> Sealed {
    keyring.seal(&associated_data(id), plaintext)
}

/// A value to store: `plaintext` sealed for row `id` with the current key,
/// created and changed `at`.
pub fn sealed_value(
    keyring: &Keyring,
    id: SealedId,
    plaintext: &[u8],
    at: chrono::DateTime<chrono::Utc>,
) -> SealedValue {
    let sealed = seal(keyring, &id, plaintext);
    SealedValue {
        id,
        key_id: sealed.key_id.as_str().to_owned(),
        sealed: sealed.bytes,
        created_at: at,
        updated_at: at,
    }
}

/// Opens a stored value.
pub fn open(keyring: &Keyring, value: &SealedValue) -> Result<Vec<u8>, OpenError> {
    let sealed = Sealed {
        key_id: KeyId::from_stored(value.key_id.clone()),
        bytes: value.sealed.clone(),
    };
    keyring.open(&associated_data(&value.id), &sealed)
}
