//! Who is calling: token checks (cached briefly), the caller's identity and
//! the rules on what each token type may do.

mod cache;
mod layer;
pub mod token;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::ApiError;
use cache::TokenCache;
pub use layer::AuthLayer;
use levers9_store::{RecordStore, TokenType, Workspace};

/// Token types that work in a workspace: its admins and its workspace tokens.
pub const USERS: &[TokenType] = &[TokenType::Admin, TokenType::Workspace];

/// Admin tokens only.
pub const ADMINS: &[TokenType] = &[TokenType::Admin];

/// How often a token's last-used time is written, at most, per replica.
const LAST_USED_RESOLUTION: Duration = Duration::from_secs(60);

/// The authenticated caller of one request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The caller's workspace: everything it touches must belong to it.
    pub workspace: Workspace,
    /// The id of the token it used.
    pub token_id: String,
    /// The type of that token.
    pub token_type: TokenType,
}

impl Caller {
    /// Refuses callers whose token type is not among `allowed`.
    pub fn require(&self, allowed: &[TokenType], action: &str) -> Result<(), ApiError> {
        if allowed.contains(&self.token_type) {
            return Ok(());
        }
        let names: Vec<&str> = allowed.iter().map(|t| t.as_str()).collect();
        Err(ApiError::PermissionDenied(format!(
            "a {} token cannot {action}: use a token of type {}",
            self.token_type,
            names.join(" or ")
        )))
    }
}

/// Checks bearer tokens against the record store, with a short cache.
pub struct Authenticator {
    store: Arc<dyn RecordStore>,
    cache: TokenCache,
}

impl Authenticator {
    /// `cache_ttl` bounds how long a revoked token keeps working on a replica
    /// that did not revoke it.
    pub fn new(store: Arc<dyn RecordStore>, cache_ttl: Duration) -> Self {
        Self {
            store,
            cache: TokenCache::new(cache_ttl),
        }
    }

    /// The caller behind `authorization: Bearer <token>`, if the headers
    /// (or gRPC metadata, as their headers) carry a token.
    pub async fn admit(&self, headers: &http::HeaderMap) -> Result<Option<Caller>, ApiError> {
        match bearer_token(headers)? {
            None => Ok(None),
            Some(secret) => self.authenticate_secret(secret).await.map(Some),
        }
    }

    /// The caller owning this token secret.
    pub async fn authenticate_secret(&self, secret: &str) -> Result<Caller, ApiError> {
        let hash = token::hash(secret);
        let now = Instant::now();
        if let Some(caller) = self.cache.get(&hash, now) {
            self.note_use(&caller, &hash, now);
            return Ok(caller);
        }
        let Some((record, workspace)) = self.store.find_token_by_hash(&hash).await? else {
            return Err(ApiError::Unauthenticated(
                "unknown token: check LEVERS9_TOKEN or the token of your CLI context \
                 (levers9 config show), or get a new one with levers9 token create"
                    .into(),
            ));
        };
        if record.revoked_at.is_some() {
            return Err(ApiError::Unauthenticated(
                "this token was revoked: get a new one with levers9 token create".into(),
            ));
        }
        let caller = Caller {
            workspace,
            token_id: record.id,
            token_type: record.token_type,
        };
        self.cache.insert(hash.clone(), caller.clone(), now);
        self.note_use(&caller, &hash, now);
        Ok(caller)
    }

    /// Forgets a token at once on this replica (others follow within the
    /// cache time).
    pub fn forget(&self, token_id: &str) {
        self.cache.remove_token(token_id);
    }

    /// Writes the last-used time in the background, at most once per
    /// [`LAST_USED_RESOLUTION`], so the hot path never waits on a write.
    fn note_use(&self, caller: &Caller, hash: &[u8], now: Instant) {
        if !self.cache.claim_touch(hash, now, LAST_USED_RESOLUTION) {
            return;
        }
        let store = self.store.clone();
        let token_id = caller.token_id.clone();
        tokio::spawn(async move {
            if let Err(error) = store.touch_token(&token_id, chrono::Utc::now()).await {
                tracing::warn!(%error, token_id, "could not record a token's last use");
            }
        });
    }
}

/// The caller [`AuthLayer`] (or the REST mapping) found for `request`, if
/// its token type is among `allowed`.
pub fn authorized<T>(
    request: &tonic::Request<T>,
    allowed: &[TokenType],
    action: &str,
) -> Result<Caller, ApiError> {
    let caller = caller(request)?;
    caller.require(allowed, action)?;
    Ok(caller)
}

/// The caller [`AuthLayer`] (or the REST mapping) found for `request`,
/// whatever its token type.
pub fn caller<T>(request: &tonic::Request<T>) -> Result<Caller, ApiError> {
    request
        .extensions()
        .get::<Caller>()
        .cloned()
        .ok_or_else(missing_token)
}

/// The answer to a call that needs a token and has none.
pub fn missing_token() -> ApiError {
    ApiError::Unauthenticated(
        "missing token: send `authorization: Bearer <token>`. Get a token from your workspace \
         admin (levers9 token create) and save it with levers9 config create or LEVERS9_TOKEN"
            .into(),
    )
}

/// The secret of `authorization: Bearer <secret>`, if the headers have one.
pub fn bearer_token(headers: &http::HeaderMap) -> Result<Option<&str>, ApiError> {
    let Some(value) = headers.get("authorization") else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| {
        ApiError::Unauthenticated("the authorization metadata is not readable text".into())
    })?;
    let secret = text
        .strip_prefix("Bearer ")
        .or_else(|| text.strip_prefix("bearer "))
        .map(str::trim)
        .ok_or_else(|| {
            ApiError::Unauthenticated("the authorization metadata must be `Bearer <token>`".into())
        })?;
    if secret.is_empty() {
        return Ok(None);
    }
    Ok(Some(secret))
}
