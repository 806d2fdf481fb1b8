//! The opening of a workspace's secrets for a container, at the last
//! moment: as its run request goes to its worker (`fleet::attach`).

use std::sync::Arc;

use levers9_api::v1::StorageCredentials;
use levers9_seal::Keyring;
use levers9_store::{SealedId, SealedKind, SealedStore};

use crate::error::ApiError;

/// Opens workspace secrets and storage credentials for a container.
#[derive(Clone)]
pub struct SecretOpener {
    /// Where sealed values are.
    pub sealed: Arc<dyn SealedStore>,
    /// The keys that open them.
    pub keyring: Keyring,
}

impl SecretOpener {
    /// The values of `names` in `workspace_id`, as environment variables.
    /// The error names the secret and says what to do; it never holds a value.
    pub async fn open(
        &self,
        workspace_id: &str,
        names: &[String],
    ) -> Result<Vec<(String, String)>, String> {
        let mut opened = Vec::with_capacity(names.len());
        for name in names {
            let id = SealedId {
                kind: SealedKind::Secret,
                workspace_id: workspace_id.to_owned(),
                name: name.clone(),
            };
            let value = self
                .sealed
                .get_sealed(&id)
                .await
                .map_err(|e| format!("cannot read secret {name}: {e}"))?
                .ok_or_else(|| format!("secret {name} was deleted before the container started"))?;
            let plain = super::open(&self.keyring, &value)
                .map_err(|e| format!("cannot open secret {name}: {e}"))?;
            let text =
                String::from_utf8(plain).map_err(|_| format!("secret {name} is not UTF-8 text"))?;
            // An inline secret's stored name is not its variable's.
            opened.push((super::env_name(name).to_owned(), text));
        }
        Ok(opened)
    }

    /// The workspace's own storage credentials (see [`super::open_storage`]).
    pub async fn open_storage(
        &self,
        workspace_id: &str,
    ) -> Result<Option<StorageCredentials>, ApiError> {
        let opened = super::open_storage(self.sealed.as_ref(), &self.keyring, workspace_id).await?;
        Ok(opened.map(|(credentials, _)| credentials))
    }
}
