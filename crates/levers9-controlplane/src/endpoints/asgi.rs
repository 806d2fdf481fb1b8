//! ASGI endpoints: the whole HTTP request goes to the app, and its answer
//! comes back, whole or streamed (see [`super::streamed`]).
//!
//! Both cross the runner's socket as one input and one result, each a
//! line of JSON (the request's or the answer's head) followed by `\n` and
//! the body's bytes as they are: a JSON line never holds a raw newline, so
//! the first one ends it, and a body is never escaped or base64-encoded.
//! Header names and values are bytes to ASGI; they travel as strings of
//! one character per byte (Latin-1), which JSON can hold whatever they are.

use axum::body::Body;
use axum::http::header::{AUTHORIZATION, CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use serde::{Deserialize, Serialize};

use super::call::HttpRequest;
use crate::error::ApiError;

/// The head of a request, as the runner builds its ASGI `http` scope.
#[derive(Serialize)]
struct RequestHead<'a> {
    method: &'a str,
    /// Under the endpoint's path, percent-decoded, from `/`.
    path: &'a str,
    /// As it came, still percent-encoded.
    raw_path: String,
    query_string: String,
    /// The endpoint's own path, `/endpoint/<workspace>/<name>`.
    root_path: String,
    headers: Vec<(String, String)>,
    /// For a websocket: the name of the connection's inbox, whose items
    /// are the client's messages (see [`super::websocket`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    websocket: Option<&'a str>,
}

/// The head of the app's answer.
#[derive(Deserialize)]
struct ResponseHead {
    status: u16,
    headers: Vec<(String, String)>,
}

/// Bytes as one character each.
fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// The inverse of [`latin1`]; None for a character past one byte.
fn bytes_of(text: &str) -> Option<Vec<u8>> {
    text.chars()
        .map(|c| u8::try_from(u32::from(c)).ok())
        .collect()
}

/// A header of the app's, from its Latin-1 strings.
pub(super) fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), String> {
    match (
        HeaderName::from_bytes(name.as_bytes()),
        bytes_of(value).map(|bytes| HeaderValue::from_bytes(&bytes)),
    ) {
        (Ok(name), Some(Ok(value))) => Ok((name, value)),
        _ => Err(format!("header {name:?}")),
    }
}

/// The input for `request` to the app served at `root_path`; `websocket`,
/// the connection's inbox, for a websocket. A private endpoint's
/// `Authorization` header (the workspace token, which the gateway has
/// checked) does not reach the app.
pub(super) fn input(
    request: &HttpRequest,
    root_path: &str,
    private: bool,
    websocket: Option<&str>,
) -> Vec<u8> {
    let raw_path = request
        .uri
        .path()
        .strip_prefix(root_path)
        .filter(|p| p.starts_with('/'))
        .unwrap_or("/")
        .to_owned();
    let head = RequestHead {
        method: request.method.as_str(),
        path: &request.path,
        raw_path,
        query_string: request.uri.query().unwrap_or_default().to_owned(),
        root_path: root_path.to_owned(),
        headers: request
            .headers
            .iter()
            .filter(|(name, _)| !(private && *name == AUTHORIZATION))
            .map(|(name, value)| (name.as_str().to_owned(), latin1(value.as_bytes())))
            .collect(),
        websocket,
    };
    // A struct of strings always serializes.
    let mut input = serde_json::to_vec(&head).unwrap_or_default();
    input.push(b'\n');
    input.extend_from_slice(&request.body);
    input
}

/// The app's whole answer from the result's bytes.
pub(super) fn response(payload: Vec<u8>) -> Result<Response, ApiError> {
    answer(payload, Body::from)
}

/// The answer whose head `payload` begins with; `body` makes its body from
/// the bytes after the head.
pub(super) fn answer(
    mut payload: Vec<u8>,
    body: impl FnOnce(Vec<u8>) -> Body,
) -> Result<Response, ApiError> {
    let broken = |what: String| {
        ApiError::FunctionFailed(format!(
            "the runner's answer from the ASGI app is not readable ({what}); is the container's \
             levers9 SDK the same version as the caller's?"
        ))
    };
    let split = payload
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| broken("no head".into()))?;
    let head: ResponseHead =
        serde_json::from_slice(&payload[..split]).map_err(|e| broken(e.to_string()))?;
    let status =
        StatusCode::from_u16(head.status).map_err(|_| broken(format!("status {}", head.status)))?;
    let rest = payload.split_off(split + 1);
    let mut response = Response::new(body(rest));
    *response.status_mut() = status;
    for (name, value) in head.headers {
        let (name, value) = header(&name, &value).map_err(broken)?;
        // The listener frames the body itself.
        if name != CONTENT_LENGTH && name != TRANSFER_ENCODING && name != CONNECTION {
            response.headers_mut().append(name, value);
        }
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use axum::body::Bytes;
    use axum::http::{HeaderMap, Method};

    use super::*;

    #[test]
    fn the_request_goes_as_a_json_head_and_the_body_as_it_is() {
        let mut headers = HeaderMap::new();
        headers.insert("x-bytes", HeaderValue::from_bytes(b"caf\xe9").unwrap());
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer secret"));
        let request = HttpRequest {
            method: Method::PUT,
            path: "/items/a b".into(),
            uri: "/endpoint/ws/app/items/a%20b?x=1".parse().unwrap(),
            headers,
            body: Bytes::from_static(b"raw\nbody\xff"),
        };
        let input = input(&request, "/endpoint/ws/app", true, None);
        let split = input.iter().position(|&b| b == b'\n').unwrap();
        let head: serde_json::Value = serde_json::from_slice(&input[..split]).unwrap();
        assert_eq!(
            head,
            serde_json::json!({
                "method": "PUT", "path": "/items/a b", "raw_path": "/items/a%20b",
                "query_string": "x=1", "root_path": "/endpoint/ws/app",
                "headers": [["x-bytes", "caf\u{e9}"]],
            })
        );
        assert_eq!(&input[split + 1..], b"raw\nbody\xff");
    }

    #[test]
    fn the_answer_keeps_the_apps_status_headers_and_body() {
        let mut payload =
            br#"{"status": 418, "headers": [["content-type", "text/plain"], ["content-length", "3"], ["x-v", "caf\u00e9"]]}"#
                .to_vec();
        payload.extend_from_slice(b"\nte\na");
        let response = response(payload).unwrap();
        assert_eq!(response.status(), StatusCode::IM_A_TEAPOT);
        assert_eq!(response.headers()["content-type"], "text/plain");
        assert_eq!(response.headers()["x-v"].as_bytes(), b"caf\xe9");
        assert!(response.headers().get(CONTENT_LENGTH).is_none());
        let err = super::response(b"no head".to_vec()).unwrap_err();
        assert!(err.to_string().contains("(no head)"), "{err}");
    }
}
