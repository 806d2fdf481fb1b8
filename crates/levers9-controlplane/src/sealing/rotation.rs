//! Re-sealing every stored value onto the current encryption key.

use levers9_seal::{Keyring, OpenError};
use levers9_store::{SealedId, SealedStore, StoreError};

use super::{open, seal};

/// What one rotation pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RotationReport {
    /// Values this pass re-sealed onto the current key.
    pub resealed: u64,
    /// Values another writer changed first (another replica re-sealed them,
    /// or a user updated them); left as they are.
    pub changed_meanwhile: u64,
    /// Values sealed with a key this controlplane was not given.
    pub unknown_key: u64,
    /// Values that did not verify under their key.
    pub tampered: u64,
    /// Values on the current key when the pass ended.
    pub on_current_key: u64,
    /// Values on any other key when the pass ended.
    pub on_other_keys: u64,
}

impl RotationReport {
    /// True when every stored value is sealed with the current key, so the
    /// previous keys can be dropped.
    pub fn all_rows_on_current_key(&self) -> bool {
        self.on_other_keys == 0
    }
}

/// Re-seals every value not on the current key, `batch_size` rows at a time.
///
/// # Guarantees
/// - Nothing is deleted, and a value is only ever replaced by the same
///   plaintext sealed with the current key: the write is a compare-and-swap
///   on the exact ciphertext read, so a concurrent update by a user, or the
///   same row re-sealed by another replica, wins and is left alone.
/// - Several replicas may run it at once: they walk the same rows, each row
///   is swapped once, and both finish.
/// - A crash half-way loses nothing: rows already re-sealed are on the
///   current key, the rest are on their old key, and the next start goes on.
/// - A value whose key is not in the keyring, or which does not verify, is
///   counted and logged with its key id (never the key) and left untouched.
///
/// # Errors
/// Only store failures; the report of a pass that failed part-way is lost,
/// and the next start runs it again.
pub async fn rotate(
    store: &dyn SealedStore,
    keyring: &Keyring,
    batch_size: u32,
) -> Result<RotationReport, StoreError> {
    let current = keyring.current_id().as_str().to_owned();
    let mut report = RotationReport::default();
    // Keyset cursor: rows that stay behind (unknown key) are not read again.
    let mut cursor: Option<SealedId> = None;
    loop {
        let batch = store
            .sealed_not_on_key(&current, cursor.as_ref(), batch_size)
            .await?;
        let Some(last) = batch.last() else { break };
        cursor = Some(last.id.clone());
        for value in &batch {
            match open(keyring, value) {
                Ok(plaintext) => {
                    let sealed = seal(keyring, &value.id, &plaintext);
                    if store.reseal(value, &current, &sealed.bytes).await? {
                        report.resealed += 1;
                    } else {
                        report.changed_meanwhile += 1;
                    }
                }
                Err(OpenError::UnknownKey(key_id)) => {
                    report.unknown_key += 1;
                    tracing::error!(
                        kind = value.id.kind.as_str(),
                        workspace_id = %value.id.workspace_id,
                        name = %value.id.name,
                        %key_id,
                        "cannot re-seal a value: it was sealed with a key that is neither \
                         encryptionKey nor in previousEncryptionKeys; add that key back to \
                         previousEncryptionKeys (the value is left as it is)"
                    );
                }
                Err(OpenError::Tampered(key_id)) => {
                    report.tampered += 1;
                    tracing::error!(
                        kind = value.id.kind.as_str(),
                        workspace_id = %value.id.workspace_id,
                        name = %value.id.name,
                        %key_id,
                        "cannot re-seal a value: it does not verify (altered or copied from \
                         another row); it is left as it is"
                    );
                }
            }
        }
    }
    for (key_id, count) in store.count_sealed_by_key().await? {
        if key_id == current {
            report.on_current_key += count;
        } else {
            report.on_other_keys += count;
        }
    }
    Ok(report)
}
