//! Signing in and out: Google (OpenID Connect), the development sign-in,
//! and the session the web app reads.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::guard::{Checked, SignedIn};
use crate::session::{
    request_cookie, set_cookie, Session, SigninState, SESSION_COOKIE, SESSION_LIFETIME,
    SIGNIN_COOKIE, SIGNIN_LIFETIME,
};
use crate::AppState;

pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/auth/config", get(config))
        .route("/api/auth/login", get(login))
        .route("/api/auth/callback", get(callback))
        .route("/api/auth/dev", post(dev_signin))
        .route("/api/auth/logout", post(logout))
        .route("/api/session", get(session))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SigninConfig {
    google: bool,
    dev_sign_in: bool,
}

/// What the sign-in page offers.
async fn config(State(state): State<Arc<AppState>>) -> Json<SigninConfig> {
    Json(SigninConfig {
        google: state.oidc.is_some(),
        dev_sign_in: state.config.dev_signin,
    })
}

/// Starts a Google sign-in: remembers state, nonce and PKCE verifier in a
/// signed cookie, and sends the browser to Google.
async fn login(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let oidc = state.oidc.as_ref().ok_or(ApiError::GoogleOff)?;
    let start = oidc.start().await?;
    let cookie = state.cookie(
        SIGNIN_COOKIE,
        &state.cookies.seal(&start.state),
        SIGNIN_LIFETIME,
    );
    Ok((
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, start.authorize_url),
            (header::SET_COOKIE, cookie),
        ],
    )
        .into_response())
}

#[derive(Deserialize)]
struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// Google sends the browser back here; a good answer becomes a session and
/// the browser goes on to the dashboard, a bad one to the sign-in page with
/// the reason.
async fn callback(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(query): Query<Callback>,
) -> Response {
    let clear = state.cookie(SIGNIN_COOKIE, "", Duration::ZERO);
    match finish(&state, &headers, query).await {
        Ok(email) => {
            tracing::info!(%email, "signed in with Google");
            let session = Session::new(&email, "google");
            let cookie = state.cookie(
                SESSION_COOKIE,
                &state.cookies.seal(&session),
                SESSION_LIFETIME,
            );
            let mut response = redirect(state.config.web_url.as_str());
            let headers = response.headers_mut();
            headers.append(
                header::SET_COOKIE,
                cookie
                    .parse()
                    .expect("base64url values and a domain checked at start"),
            );
            headers.append(
                header::SET_COOKIE,
                clear
                    .parse()
                    .expect("base64url values and a domain checked at start"),
            );
            response
        }
        Err(error) => {
            tracing::info!(%error, "Google sign-in refused");
            let mut page = state.config.web_url.clone();
            page.set_path("/signin");
            page.query_pairs_mut()
                .append_pair("error", &error.to_string());
            let mut response = redirect(page.as_str());
            response.headers_mut().append(
                header::SET_COOKIE,
                clear
                    .parse()
                    .expect("base64url values and a domain checked at start"),
            );
            response
        }
    }
}

async fn finish(
    state: &AppState,
    headers: &HeaderMap,
    query: Callback,
) -> Result<String, ApiError> {
    let oidc = state.oidc.as_ref().ok_or(ApiError::GoogleOff)?;
    if let Some(error) = query.error {
        return Err(ApiError::SignIn(format!("the provider answered {error}")));
    }
    let (Some(code), Some(returned_state)) = (query.code, query.state) else {
        return Err(ApiError::SignIn("the callback has no code or state".into()));
    };
    let cookie = request_cookie(headers, SIGNIN_COOKIE).ok_or_else(|| {
        ApiError::SignIn("this browser did not start a sign-in (or took too long)".into())
    })?;
    let signin: SigninState = state
        .cookies
        .open(cookie)
        .map_err(|e| ApiError::SignIn(format!("sign-in cookie: {e}")))?;
    oidc.finish(signin, &code, &returned_state).await
}

fn redirect(to: &str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, to.to_owned())]).into_response()
}

#[derive(Deserialize)]
struct DevSignin {
    email: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionView {
    email: String,
    method: String,
    csrf_token: String,
    dev_sign_in: bool,
}

/// The development sign-in: any email, no password. Off unless
/// LEVERS9_DASHBOARD_DEV_SIGNIN=true; only the dashboard's own origin may
/// call it, so another site cannot sign a visitor in.
async fn dev_signin(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Json(body): Json<DevSignin>,
) -> Result<Response, ApiError> {
    if !state.config.dev_signin {
        return Err(ApiError::DevSigninOff);
    }
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !state.trusted_origin(origin) {
        return Err(ApiError::Forbidden(
            "the development sign-in only answers the dashboard's own pages".into(),
        ));
    }
    let email = body.email.trim();
    match email.split_once('@') {
        Some((user, domain)) if !user.is_empty() && domain.contains('.') => {}
        _ => {
            return Err(ApiError::BadRequest(format!(
                "{email:?} is not an email address (name@domain)"
            )))
        }
    }
    tracing::warn!(%email, "development sign-in: nobody checked who this is");
    let session = Session::new(email, "dev");
    let cookie = state.cookie(
        SESSION_COOKIE,
        &state.cookies.seal(&session),
        SESSION_LIFETIME,
    );
    let view = state.view(session);
    Ok(([(header::SET_COOKIE, cookie)], Json(view)).into_response())
}

async fn logout(State(state): State<Arc<AppState>>, Checked(session): Checked) -> Response {
    tracing::info!(email = %session.email, "signed out");
    let clear = state.cookie(SESSION_COOKIE, "", Duration::ZERO);
    ([(header::SET_COOKIE, clear)], StatusCode::NO_CONTENT).into_response()
}

async fn session(
    State(state): State<Arc<AppState>>,
    SignedIn(session): SignedIn,
) -> impl IntoResponse {
    Json(state.view(session))
}

impl AppState {
    fn view(&self, session: Session) -> SessionView {
        SessionView {
            email: session.email,
            method: session.method,
            csrf_token: session.csrf,
            dev_sign_in: self.config.dev_signin,
        }
    }

    fn cookie(&self, name: &str, value: &str, max_age: Duration) -> String {
        set_cookie(
            name,
            value,
            max_age,
            self.config.secure_cookies(),
            self.config.cookie_domain.as_deref(),
        )
    }
}
