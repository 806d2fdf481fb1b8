//! The bearer token every authenticated client puts on its calls.

use tonic::metadata::{Ascii, MetadataValue};

/// Adds `authorization: Bearer <token>` to every call; [`Bearer::none`]
/// adds nothing (a caller that has no token yet, such as bootstrap).
#[derive(Clone, Default)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

/// A token with characters no token has (not visible ASCII).
#[derive(Debug, thiserror::Error)]
#[error("the token has characters a token never has: check it")]
pub struct InvalidToken;

impl Bearer {
    /// Puts `token` on every call.
    pub fn token(token: &str) -> Result<Bearer, InvalidToken> {
        let value = format!("Bearer {token}")
            .parse()
            .map_err(|_| InvalidToken)?;
        Ok(Bearer(Some(value)))
    }

    /// Puts no token on calls.
    pub fn none() -> Bearer {
        Bearer(None)
    }
}

impl tonic::service::Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}
