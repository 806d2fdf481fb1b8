//! The dashboard's API: Google sign-in (OpenID Connect with PKCE), signed
//! session cookies with CSRF protection, and a JSON view of the
//! controlplane for the web app. Settings: docs/dashboard.md.
#![forbid(unsafe_code)]
// Not documented throughout yet (about 60 public items): the workspace's
// missing_docs waits for that here.
#![allow(missing_docs)]

pub mod config;
pub mod controlplane;
pub mod deployments;
pub mod error;
pub mod guard;
pub mod oidc;
pub mod routes;
pub mod session;
pub mod signin;
pub mod streams;
pub mod stubs;
pub mod volumes;

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;

use crate::config::Config;
use crate::controlplane::Controlplane;
use crate::oidc::Oidc;
use crate::session::CookieKey;

/// What every handler shares.
pub struct AppState {
    pub config: Config,
    pub cookies: CookieKey,
    pub oidc: Option<Oidc>,
    pub cp: Controlplane,
}

/// Why the API could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error(transparent)]
    Controlplane(#[from] controlplane::ConnectError),
    #[error("Google sign-in: {0}")]
    Oidc(#[from] error::ApiError),
    #[error("serve: {0}")]
    Serve(#[from] std::io::Error),
}

impl AppState {
    pub fn new(config: Config) -> Result<AppState, StartError> {
        let cp = Controlplane::new(&config.controlplane, &config.token)?;
        let oidc = match &config.oidc {
            Some(settings) => {
                let redirect = format!(
                    "{}/auth/callback",
                    config.api_url.as_str().trim_end_matches('/')
                );
                Some(Oidc::new(settings.clone(), &redirect)?)
            }
            None => None,
        };
        Ok(AppState {
            cookies: CookieKey::new(&config.session_secret),
            config,
            oidc,
            cp,
        })
    }

    /// Origins whose pages may call the API with the session: the web app's,
    /// and the API's own.
    pub fn trusted_origin(&self, origin: &str) -> bool {
        origin == self.config.web_origin()
            || origin == self.config.api_url.origin().ascii_serialization()
    }
}

/// Every route, with the origin check and CORS around them.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/api/healthz", get(|| async { "ok" }))
        .merge(signin::routes())
        .merge(routes::routes())
        .merge(streams::routes())
        .merge(deployments::routes())
        .merge(stubs::routes())
        .merge(volumes::routes())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::origin_and_cors,
        ))
        .with_state(state)
}

/// Serves the API on `listener` until the process ends.
pub async fn serve(config: Config, listener: TcpListener) -> Result<(), StartError> {
    if config.dev_signin {
        tracing::warn!(
            "the development sign-in is ON (LEVERS9_DASHBOARD_DEV_SIGNIN=true): anyone who \
             reaches this API can sign in as any email; never turn it on where people outside \
             your team can reach the dashboard"
        );
    }
    match &config.oidc {
        Some(oidc) => tracing::info!(
            issuer = %oidc.issuer,
            allowed_domains = %oidc.allowed_domains.join(","),
            "Google sign-in on"
        ),
        None if !config.dev_signin => tracing::warn!(
            "no sign-in is configured: set LEVERS9_DASHBOARD_GOOGLE_CLIENT_ID (docs/dashboard.md)"
        ),
        None => {}
    }
    let state = Arc::new(AppState::new(config)?);
    tracing::info!(addr = %listener.local_addr()?, "dashboard API listening");
    axum::serve(listener, router(state)).await?;
    Ok(())
}
