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
            ApiError::Controlplane(status) => controlplane_status(status.code()),
        }
    }
}

/// What a controlplane error becomes here: the controlplane's own REST
/// table (grpc-gateway's, [`levers9_api::http_status_of`]), except where
/// this API is the one at fault as a gateway.
fn controlplane_status(code: tonic::Code) -> StatusCode {
    match code {
        // The API's own token was refused, which the person in the browser
        // cannot fix.
        tonic::Code::Unauthenticated => StatusCode::BAD_GATEWAY,
        code => match levers9_api::http_status_of(code) {
            // A failure inside the controlplane, seen through this API.
            StatusCode::INTERNAL_SERVER_ERROR => StatusCode::BAD_GATEWAY,
            status => status,
        },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controlplane_codes_answer_as_its_rest_mapping_except_where_this_api_is_at_fault() {
        let table = [
            (tonic::Code::NotFound, StatusCode::NOT_FOUND),
            (tonic::Code::InvalidArgument, StatusCode::BAD_REQUEST),
            (tonic::Code::FailedPrecondition, StatusCode::BAD_REQUEST),
            (tonic::Code::PermissionDenied, StatusCode::FORBIDDEN),
            (tonic::Code::Unavailable, StatusCode::SERVICE_UNAVAILABLE),
            (tonic::Code::DeadlineExceeded, StatusCode::GATEWAY_TIMEOUT),
            (
                tonic::Code::ResourceExhausted,
                StatusCode::TOO_MANY_REQUESTS,
            ),
            (tonic::Code::Unauthenticated, StatusCode::BAD_GATEWAY),
            (tonic::Code::Internal, StatusCode::BAD_GATEWAY),
            (tonic::Code::Unknown, StatusCode::BAD_GATEWAY),
        ];
        for (code, status) in table {
            let error = ApiError::Controlplane(tonic::Status::new(code, "m"));
            assert_eq!(error.status(), status, "{code:?}");
        }
    }
}
