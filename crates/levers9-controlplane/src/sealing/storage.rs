//! A workspace's object storage credentials, sealed under one row and
//! opened only where they are used: for its volumes (a container's mount,
//! the controlplane's own volume calls) and to show them without the key.

use levers9_api::v1::StorageCredentials;
use levers9_seal::Keyring;
use levers9_store::{SealedId, SealedKind, SealedStore};
use zeroize::Zeroizing;

use crate::error::ApiError;

/// A workspace has one set of storage credentials, stored under this name.
const STORAGE_NAME: &str = "default";

/// The row of a workspace's storage credentials.
pub fn storage_id(workspace_id: &str) -> SealedId {
    SealedId {
        kind: SealedKind::StorageCredentials,
        workspace_id: workspace_id.to_owned(),
        name: STORAGE_NAME.to_owned(),
    }
}

/// The workspace's storage credentials, opened, and the id of the key that
/// sealed them; `None` when it has none. The opened bytes are zeroed once
/// parsed; the error never holds a key.
pub async fn open_storage(
    sealed: &dyn SealedStore,
    keyring: &Keyring,
    workspace_id: &str,
) -> Result<Option<(StorageCredentials, String)>, ApiError> {
    let Some(value) = sealed.get_sealed(&storage_id(workspace_id)).await? else {
        return Ok(None);
    };
    let plaintext = Zeroizing::new(super::open(keyring, &value).map_err(|e| {
        ApiError::FailedPrecondition(format!("cannot open the storage credentials: {e}"))
    })?);
    let credentials = serde_json::from_slice(&plaintext).map_err(|e| {
        ApiError::FailedPrecondition(format!(
            "the stored storage credentials are unreadable: {e}"
        ))
    })?;
    Ok(Some((credentials, value.key_id)))
}

/// The workspace's storage credentials as the volumes take them: moved,
/// not copied, so only the zeroing copy is left.
pub fn volume_storage(credentials: StorageCredentials) -> levers9_volumes::WorkspaceStorage {
    levers9_volumes::WorkspaceStorage::new(
        credentials.endpoint,
        credentials.bucket,
        credentials.access_key_id,
        credentials.secret_access_key,
    )
}
