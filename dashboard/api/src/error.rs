//! The one place errors become HTTP answers: a status and
//! `{"error": "..."}` that says what to do.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// Everything a handler can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("not signed in: sign in again")]
    NotSignedIn,
    #[error("{0}")]
    Forbidden(String),
    #[error("missing or wrong CSRF token: reload the page and try again")]
    Csrf,
    #[error("the development sign-in is off on this API (LEVERS9_DASHBOARD_DEV_SIGNIN)")]
    DevSigninOff,
    #[error("Google sign-in is not configured on this API (LEVERS9_DASHBOARD_GOOGLE_CLIENT_ID)")]
    GoogleOff,
    #[error("{0}")]
    BadRequest(String),
    #[error("sign-in failed: {0}")]
    SignIn(String),
    #[error("the identity provider could not be reached: {0}")]
    Provider(String),
    #[error("controlplane: {}", .0.message())]
    Controlplane(#[from] tonic::Status),
}

impl ApiError {
    fn status(&self) -> StatusCode {
        match self {
            ApiError::NotSignedIn => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) | ApiError::Csrf => StatusCode::FORBIDDEN,
            ApiError::DevSigninOff | ApiError::GoogleOff => StatusCode::NOT_FOUND,
            ApiError::BadRequest(_) | ApiError::SignIn(_) => StatusCode::BAD_REQUEST,
            ApiError::Provider(_) => StatusCode::BAD_GATEWAY,
            ApiError::Controlplane(status) => match status.code() {
                tonic::Code::NotFound => StatusCode::NOT_FOUND,
                tonic::Code::InvalidArgument | tonic::Code::FailedPrecondition => {
                    StatusCode::BAD_REQUEST
                }
                tonic::Code::PermissionDenied => StatusCode::FORBIDDEN,
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded => {
                    StatusCode::SERVICE_UNAVAILABLE
                }
                // Includes Unauthenticated: the API's own token was refused,
                // which the person in the browser cannot fix.
                _ => StatusCode::BAD_GATEWAY,
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::warn!(error = %self, "dashboard API call failed");
        }
        (
            status,
            Json(serde_json::json!({ "error": self.to_string() })),
        )
            .into_response()
    }
}
