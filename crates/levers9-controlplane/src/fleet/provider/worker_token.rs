//! The worker token of a `provider: kubernetes` pool's Jobs. The
//! controlplane keeps the pool's Secret holding a live worker token, so an
//! install needs no hand-made Secret: a Secret that is missing, or whose
//! token is unknown, revoked or not a worker token, gets a fresh worker
//! token of the install's first workspace. Only the hash is stored; the
//! token itself goes only into the Secret.

use levers9_kube::{KubeError, WorkerTokenSecret};
use levers9_store::{NewToken, RecordStore, StoreError, TokenType};

use crate::auth::token;

/// What one round found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// The Secret holds a live worker token.
    Live,
    /// The Secret now holds a fresh token.
    Written,
    /// No workspace yet (before bootstrap): nothing to mint a token in.
    NoWorkspace,
}

/// Why the Secret could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum KeepError {
    /// The cluster refused or did not answer.
    #[error(transparent)]
    Kube(#[from] KubeError),
    /// The token could not be checked or stored.
    #[error("cannot check or store pool {pool}'s worker token: {source}")]
    Store {
        /// The pool's name (a key of `worker.pools`).
        pool: String,
        /// Why.
        #[source]
        source: StoreError,
    },
}

/// Makes `secret` hold a live worker token for pool `pool`'s Jobs.
pub async fn keep(
    store: &dyn RecordStore,
    secret: &WorkerTokenSecret,
    pool: &str,
) -> Result<Kept, KeepError> {
    let store_error = |source| KeepError::Store {
        pool: pool.to_owned(),
        source,
    };
    if let Some(current) = secret.read().await? {
        let found = store
            .find_token_by_hash(&token::hash(&current))
            .await
            .map_err(store_error)?;
        let live = found.is_some_and(|(record, _)| {
            record.revoked_at.is_none() && record.token_type == TokenType::Worker
        });
        if live {
            return Ok(Kept::Live);
        }
    }
    let description = format!("worker Jobs of pool {pool} (kept by the controlplane)");
    let Some(minted) = mint(store, description).await.map_err(store_error)? else {
        return Ok(Kept::NoWorkspace);
    };
    if let Err(error) = secret.write(&minted.secret).await {
        // A token nobody holds is only a liability.
        minted.credential.revoke(store).await;
        return Err(error.into());
    }
    let credential = &minted.credential;
    tracing::info!(pool, token_id = %credential.token_id, workspace_id = %credential.workspace_id, "wrote a fresh worker token into the pool's Secret");
    Ok(Kept::Written)
}

/// A worker token the controlplane made for a worker it provides. Not
/// `Debug`: it holds the token.
pub struct MintedWorker {
    /// What names it in the store.
    pub credential: WorkerCredential,
    /// The token, for the worker only.
    pub secret: String,
}

/// A stored worker token, by id.
#[derive(Debug, Clone)]
pub struct WorkerCredential {
    /// Its workspace, the install's first.
    pub workspace_id: String,
    /// The id of its token row, by which it is revoked.
    pub token_id: String,
}

impl WorkerCredential {
    /// Revokes it (its worker is gone, or never got it); a failure is
    /// logged.
    pub async fn revoke(&self, store: &dyn RecordStore) {
        let revoked = store
            .revoke_token(&self.workspace_id, &self.token_id, chrono::Utc::now())
            .await;
        if let Err(error) = revoked {
            tracing::warn!(%error, token_id = %self.token_id, "cannot revoke a worker token no worker holds any more");
        }
    }
}

/// Mints a worker token in the install's first workspace, the one bootstrap
/// made: worker tokens act install-wide, so any workspace would do, and
/// this one always exists once there is any. None before bootstrap.
pub async fn mint(
    store: &dyn RecordStore,
    description: String,
) -> Result<Option<MintedWorker>, StoreError> {
    let Some(workspace) = store.first_workspace().await? else {
        return Ok(None);
    };
    let minted = token::mint();
    let record = store
        .insert_token(NewToken {
            id: crate::new_id(),
            workspace_id: workspace.id.clone(),
            token_type: TokenType::Worker,
            description,
            hash: minted.hash,
            created_at: chrono::Utc::now(),
        })
        .await?;
    Ok(Some(MintedWorker {
        credential: WorkerCredential {
            workspace_id: workspace.id,
            token_id: record.id,
        },
        secret: minted.secret,
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use base64::Engine;
    use http::{Method, Request, Response};
    use kube::client::Body;
    use levers9_store::{NewWorkspace, SqliteStore};
    use serde_json::{json, Value};

    use super::*;

    /// A stand-in API server that keeps one Secret's token, and refuses
    /// writes when told to.
    #[derive(Clone, Default)]
    struct FakeApi {
        token: Arc<Mutex<Option<String>>>,
        refuse_writes: bool,
        writes: Arc<Mutex<usize>>,
    }

    impl FakeApi {
        fn secret(&self) -> WorkerTokenSecret {
            let api = self.clone();
            let service = tower::service_fn(move |request: Request<Body>| {
                let api = api.clone();
                async move {
                    let (parts, body) = request.into_parts();
                    let body = body.collect_bytes().await?;
                    let (status, answer) = api.answer(&parts.method, &body);
                    let response = Response::builder()
                        .status(status)
                        .header("content-type", "application/json")
                        .body(Body::from(serde_json::to_vec(&answer)?))?;
                    Ok::<_, Box<dyn std::error::Error + Send + Sync>>(response)
                }
            });
            let client = kube::Client::new(service, "levers9-workers");
            WorkerTokenSecret::new(client, "levers9-workers", "levers9-worker-token")
        }

        fn answer(&self, method: &Method, body: &[u8]) -> (u16, Value) {
            let failure = |code: u16, reason: &str| {
                json!({"apiVersion": "v1", "kind": "Status", "metadata": {},
                       "status": "Failure", "reason": reason, "code": code})
            };
            let mut token = self.token.lock().expect("token");
            if *method == Method::PATCH {
                if self.refuse_writes {
                    return (403, failure(403, "Forbidden"));
                }
                let body: Value = serde_json::from_slice(body).expect("JSON body");
                *token = body["stringData"]["token"].as_str().map(str::to_owned);
                *self.writes.lock().expect("writes") += 1;
            }
            match token.as_deref() {
                None => (404, failure(404, "NotFound")),
                Some(value) => {
                    let encoded = base64::engine::general_purpose::STANDARD.encode(value);
                    (
                        200,
                        json!({"apiVersion": "v1", "kind": "Secret",
                               "metadata": {"name": "levers9-worker-token"},
                               "data": {"token": encoded}}),
                    )
                }
            }
        }

        fn token(&self) -> Option<String> {
            self.token.lock().expect("token").clone()
        }

        fn writes(&self) -> usize {
            *self.writes.lock().expect("writes")
        }
    }

    async fn store(dir: &tempfile::TempDir) -> SqliteStore {
        SqliteStore::open(&dir.path().join("state.db"))
            .await
            .expect("store")
    }

    async fn bootstrap(store: &SqliteStore) -> String {
        let minted = token::mint();
        let workspace = NewWorkspace {
            id: crate::new_id(),
            name: "first".into(),
            created_at: chrono::Utc::now(),
        };
        let admin = NewToken {
            id: crate::new_id(),
            workspace_id: workspace.id.clone(),
            token_type: TokenType::Admin,
            description: "admin".into(),
            hash: minted.hash,
            created_at: chrono::Utc::now(),
        };
        store
            .create_workspace(workspace.clone(), admin)
            .await
            .expect("workspace");
        minted.secret
    }

    async fn stored_worker_token(store: &SqliteStore, secret: &str) -> levers9_store::TokenRecord {
        let (record, _) = store
            .find_token_by_hash(&token::hash(secret))
            .await
            .expect("lookup")
            .expect("the Secret's token is stored");
        record
    }

    #[tokio::test]
    async fn the_secret_is_written_after_bootstrap_and_then_left_alone() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(&dir).await;
        let api = FakeApi::default();
        let secret = api.secret();

        assert_eq!(
            keep(&store, &secret, "gpu").await.expect("keep"),
            Kept::NoWorkspace
        );
        assert_eq!(api.writes(), 0);

        bootstrap(&store).await;
        assert_eq!(
            keep(&store, &secret, "gpu").await.expect("keep"),
            Kept::Written
        );
        let written = api.token().expect("a token in the Secret");
        let record = stored_worker_token(&store, &written).await;
        assert_eq!(record.token_type, TokenType::Worker);
        assert!(
            record.description.contains("pool gpu"),
            "{}",
            record.description
        );

        assert_eq!(
            keep(&store, &secret, "gpu").await.expect("keep"),
            Kept::Live
        );
        assert_eq!(api.writes(), 1);
        assert_eq!(api.token().as_deref(), Some(written.as_str()));
    }

    #[tokio::test]
    async fn a_revoked_or_wrong_token_is_replaced() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(&dir).await;
        let admin = bootstrap(&store).await;
        let api = FakeApi::default();
        let secret = api.secret();

        keep(&store, &secret, "gpu").await.expect("keep");
        let first = api.token().expect("token");
        let record = stored_worker_token(&store, &first).await;
        store
            .revoke_token(&record.workspace_id, &record.id, chrono::Utc::now())
            .await
            .expect("revoke");
        assert_eq!(
            keep(&store, &secret, "gpu").await.expect("keep"),
            Kept::Written
        );
        let second = api.token().expect("token");
        assert_ne!(second, first);

        // An admin token put there by hand is no worker token.
        *api.token.lock().expect("token") = Some(admin.clone());
        assert_eq!(
            keep(&store, &secret, "gpu").await.expect("keep"),
            Kept::Written
        );
        assert_ne!(api.token().as_deref(), Some(admin.as_str()));

        *api.token.lock().expect("token") = Some("l9_unknown".into());
        assert_eq!(
            keep(&store, &secret, "gpu").await.expect("keep"),
            Kept::Written
        );
        let replaced = api.token().expect("token");
        assert_eq!(
            stored_worker_token(&store, &replaced).await.token_type,
            TokenType::Worker
        );
    }

    #[tokio::test]
    async fn a_token_that_cannot_be_written_is_revoked_at_once() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(&dir).await;
        bootstrap(&store).await;
        let api = FakeApi {
            refuse_writes: true,
            ..FakeApi::default()
        };
        let error = keep(&store, &api.secret(), "gpu")
            .await
            .expect_err("refused")
            .to_string();
        assert!(
            error.contains("get, create and patch on secrets"),
            "{error}"
        );
        let workspace = store.first_workspace().await.expect("read").expect("one");
        let tokens = store.list_tokens(&workspace.id).await.expect("tokens");
        let worker: Vec<_> = tokens
            .iter()
            .filter(|t| t.token_type == TokenType::Worker)
            .collect();
        assert_eq!(worker.len(), 1);
        assert!(
            worker[0].revoked_at.is_some(),
            "the unused token stays live"
        );
    }
}
