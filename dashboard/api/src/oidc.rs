//! Google sign-in through OpenID Connect: the authorization code flow with
//! PKCE, the ID token checked against the provider's published keys, the
//! issuer, our client id and the nonce, then the email's domain against the
//! allowed ones.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, HttpRequest, HttpResponse, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, Scope, TokenResponse as _,
};
use subtle::ConstantTimeEq as _;
use tokio::sync::Mutex;

use crate::config::OidcSettings;
use crate::error::ApiError;
use crate::session::{unix_now, SigninState, SIGNIN_LIFETIME};

/// Discovery (and with it the signing keys) is fetched again after this,
/// so a key rotation at the provider is picked up.
const DISCOVERY_TTL: Duration = Duration::from_secs(3600);
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// The provider, discovered on first use and refreshed hourly.
pub struct Oidc {
    settings: OidcSettings,
    redirect: RedirectUrl,
    http: reqwest::Client,
    discovered: Mutex<Option<(Instant, Client)>>,
}

/// Where to send the browser, and the state to keep in its sign-in cookie.
pub struct Start {
    pub authorize_url: String,
    pub state: SigninState,
}

impl Oidc {
    pub fn new(settings: OidcSettings, redirect_url: &str) -> Result<Oidc, ApiError> {
        let redirect = RedirectUrl::new(redirect_url.to_owned())
            .map_err(|e| ApiError::BadRequest(format!("redirect URL {redirect_url}: {e}")))?;
        let http = reqwest::Client::builder()
            // The token endpoint must not be followed elsewhere (SSRF).
            .redirect(reqwest::redirect::Policy::none())
            .timeout(HTTP_TIMEOUT)
            .build()
            .map_err(|e| ApiError::Provider(e.to_string()))?;
        Ok(Oidc {
            settings,
            redirect,
            http,
            discovered: Mutex::new(None),
        })
    }

    pub fn allowed_domains(&self) -> &[String] {
        &self.settings.allowed_domains
    }

    async fn client(&self) -> Result<Client, ApiError> {
        let mut discovered = self.discovered.lock().await;
        if let Some((at, client)) = discovered.as_ref() {
            if at.elapsed() < DISCOVERY_TTL {
                return Ok(client.clone());
            }
        }
        let issuer = IssuerUrl::new(self.settings.issuer.clone())
            .map_err(|e| ApiError::Provider(format!("issuer {}: {e}", self.settings.issuer)))?;
        let http = self.http_client();
        let metadata = CoreProviderMetadata::discover_async(issuer, &http)
            .await
            .map_err(|e| {
                ApiError::Provider(format!("discovery: {}", levers9_api::error_chain(&e)))
            })?;
        let client = CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.settings.client_id.clone()),
            Some(ClientSecret::new(self.settings.client_secret.clone())),
        )
        .set_redirect_uri(self.redirect.clone());
        *discovered = Some((Instant::now(), client.clone()));
        Ok(client)
    }

    /// Starts a sign-in: the provider's authorization URL with a PKCE
    /// challenge, a CSRF state and a nonce.
    pub async fn start(&self) -> Result<Start, ApiError> {
        let client = self.client().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".into()))
            .set_pkce_challenge(challenge)
            .url();
        Ok(Start {
            authorize_url: url.to_string(),
            state: SigninState {
                state: state.secret().clone(),
                nonce: nonce.secret().clone(),
                pkce_verifier: verifier.secret().clone(),
                expires_at: unix_now() + SIGNIN_LIFETIME.as_secs(),
            },
        })
    }

    /// Finishes a sign-in: exchanges the code (with the PKCE verifier),
    /// verifies the ID token, and returns the verified email of an allowed
    /// domain.
    pub async fn finish(
        &self,
        signin: SigninState,
        code: &str,
        state: &str,
    ) -> Result<String, ApiError> {
        // The state ties the callback to the browser that started it.
        if !bool::from(signin.state.as_bytes().ct_eq(state.as_bytes())) {
            return Err(ApiError::SignIn(
                "the sign-in state does not match this browser's: start again".into(),
            ));
        }
        let client = self.client().await?;
        let http = self.http_client();
        let tokens = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| ApiError::Provider(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(signin.pkce_verifier))
            .request_async(&http)
            .await
            .map_err(|e| {
                ApiError::SignIn(format!("code exchange: {}", levers9_api::error_chain(&e)))
            })?;
        let id_token = tokens
            .id_token()
            .ok_or_else(|| ApiError::SignIn("the provider returned no ID token".into()))?;
        let claims = id_token
            .claims(&client.id_token_verifier(), &Nonce::new(signin.nonce))
            .map_err(|e| ApiError::SignIn(format!("ID token: {}", levers9_api::error_chain(&e))))?;
        let email = claims
            .email()
            .map(|e| e.as_str().to_owned())
            .ok_or_else(|| ApiError::SignIn("the ID token has no email".into()))?;
        if claims.email_verified() != Some(true) {
            return Err(ApiError::Forbidden(format!(
                "{email} is not verified at the identity provider"
            )));
        }
        self.check_domain(&email)?;
        Ok(email)
    }

    /// Only people of the allowed domains get in.
    pub fn check_domain(&self, email: &str) -> Result<(), ApiError> {
        let domain = email
            .rsplit_once('@')
            .map(|(_, d)| d.to_ascii_lowercase())
            .unwrap_or_default();
        if self.settings.allowed_domains.contains(&domain) {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "{email} may not sign in: only {} accounts are allowed",
                self.settings.allowed_domains.join(", ")
            )))
        }
    }
}

impl Oidc {
    /// The HTTP client openidconnect calls, on our reqwest. Each call gets
    /// its own handle, so the future owns everything it uses.
    fn http_client(
        &self,
    ) -> impl Fn(HttpRequest) -> Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send>>
    {
        let client = self.http.clone();
        move |request| {
            let client = client.clone();
            Box::pin(async move { send(&client, request).await })
        }
    }
}

async fn send(client: &reqwest::Client, request: HttpRequest) -> Result<HttpResponse, HttpError> {
    let (parts, body) = request.into_parts();
    let response = client
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await?;
    let mut builder = http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        builder = builder.header(name, value);
    }
    let body = response.bytes().await?.to_vec();
    builder.body(body).map_err(HttpError::Response)
}

/// Why a call to the provider failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error(transparent)]
    Request(#[from] reqwest::Error),
    #[error("bad response: {0}")]
    Response(http::Error),
}
