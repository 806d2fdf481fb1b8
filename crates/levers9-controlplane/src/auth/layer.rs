//! One authentication step in front of every gRPC service: the caller its
//! token names goes into the request's extensions, where handlers take it
//! with [`super::authorized`].

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use tonic::Status;

use super::Authenticator;

/// Methods that carry no API token. A join token is no API token: looking
/// it up as one would refuse every agent.
const OPEN_METHODS: &[&str] = &["/levers9.v1.MachineService/JoinMachine"];

/// Services that carry no API token: probes must not reach the record store.
const OPEN_SERVICES: &[&str] = &["/grpc.health.v1.Health/"];

/// Whether a gRPC path is answered without looking at its token.
fn is_open(path: &str) -> bool {
    OPEN_METHODS.contains(&path) || OPEN_SERVICES.iter().any(|s| path.starts_with(s))
}

/// Wraps the gRPC server: a request with a bearer token is refused here if
/// the token is unknown or revoked, and otherwise reaches its handler with
/// its [`super::Caller`]. A request without one goes on without a caller, so
/// bootstrap can answer it and every other handler refuses it.
#[derive(Clone)]
pub struct AuthLayer(pub Arc<Authenticator>);

impl<S> tower::Layer<S> for AuthLayer {
    type Service = Authenticated<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Authenticated {
            inner,
            auth: self.0.clone(),
        }
    }
}

/// The service [`AuthLayer`] wraps around the gRPC server.
#[derive(Clone)]
pub struct Authenticated<S> {
    inner: S,
    auth: Arc<Authenticator>,
}

impl<S, B, RB> tower::Service<http::Request<B>> for Authenticated<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
    RB: Default,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        if is_open(request.uri().path()) {
            return Box::pin(self.inner.call(request));
        }
        // The clone that was made ready goes with this request; the fresh
        // clone waits for the next poll_ready.
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        let auth = self.auth.clone();
        Box::pin(async move {
            match auth.admit(request.headers()).await {
                Ok(Some(caller)) => {
                    request.extensions_mut().insert(caller);
                }
                Ok(None) => {}
                Err(refused) => return Ok(Status::from(refused).into_http()),
            }
            inner.call(request).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::is_open;

    #[test]
    fn only_joins_and_health_probes_skip_the_token_check() {
        assert!(is_open("/levers9.v1.MachineService/JoinMachine"));
        assert!(is_open("/grpc.health.v1.Health/Check"));
        assert!(!is_open("/levers9.v1.MachineService/CreateMachine"));
        assert!(!is_open("/levers9.v1.FunctionService/Run"));
        assert!(!is_open("/levers9.v1.AuthService/Authorize"));
    }
}
