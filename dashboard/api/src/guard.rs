//! Who may call: the session extractors, the CSRF check on every
//! state-changing call, and CORS for the web app's origin only.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq as _;

use crate::error::ApiError;
use crate::session::{request_cookie, Session, SESSION_COOKIE};
use crate::AppState;

/// The header a state-changing call carries the session's CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// A signed-in caller (any method).
pub struct SignedIn(pub Session);

/// A signed-in caller whose `x-csrf-token` matches the session: required
/// by every handler that changes something.
pub struct Checked(pub Session);

impl FromRequestParts<Arc<AppState>> for SignedIn {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let cookie = request_cookie(&parts.headers, SESSION_COOKIE).ok_or(ApiError::NotSignedIn)?;
        match state.cookies.open::<Session>(cookie) {
            Ok(session) => Ok(SignedIn(session)),
            Err(why) => {
                tracing::info!(%why, "session cookie refused");
                Err(ApiError::NotSignedIn)
            }
        }
    }
}

impl FromRequestParts<Arc<AppState>> for Checked {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let SignedIn(session) = SignedIn::from_request_parts(parts, state).await?;
        let sent = parts
            .headers
            .get(CSRF_HEADER)
            .map(HeaderValue::as_bytes)
            .unwrap_or_default();
        if bool::from(sent.ct_eq(session.csrf.as_bytes())) {
            Ok(Checked(session))
        } else {
            Err(ApiError::Csrf)
        }
    }
}

fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// CORS for the web app's origin, and a refusal of state-changing calls
/// that another origin's page makes (a second line behind the CSRF token;
/// the one line for sign-in calls, which have no session yet).
pub async fn origin_and_cors(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let origin = request
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let allowed = origin.as_deref().is_some_and(|o| state.trusted_origin(o));
    if let (Some(origin), false) = (&origin, allowed) {
        if !is_safe(request.method()) {
            tracing::info!(%origin, "cross-origin call refused");
            return ApiError::Forbidden(format!(
                "calls from {origin} are refused: only the dashboard may change things"
            ))
            .into_response();
        }
    }
    let preflight = request.method() == Method::OPTIONS;
    let mut response = if preflight && allowed {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    headers.insert(header::VARY, HeaderValue::from_static("Origin"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if let (Some(origin), true) = (origin, allowed) {
        if let Ok(value) = HeaderValue::from_str(&origin) {
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
            if preflight {
                headers.insert(
                    header::ACCESS_CONTROL_ALLOW_METHODS,
                    HeaderValue::from_static("GET, POST, DELETE"),
                );
                headers.insert(
                    header::ACCESS_CONTROL_ALLOW_HEADERS,
                    HeaderValue::from_static("content-type, x-csrf-token"),
                );
                headers.insert(
                    header::ACCESS_CONTROL_MAX_AGE,
                    HeaderValue::from_static("600"),
                );
            }
        }
    }
    response
}
