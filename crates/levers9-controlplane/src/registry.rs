//! The local image storage served as a read-only registry: the pull half of
//! the OCI distribution API (`/v2/<name>/manifests/<ref>` and
//! `/v2/<name>/blobs/<digest>`), from `imageService.localImages`.
//!
//! It is what lets `levers9 up` run functions on a machine with no registry:
//! its worker pulls the base image from here like from any registry. No
//! token is asked for: what it holds are base images, and it is off unless
//! configured.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use levers9_image::layout::Layout;
use tokio_util::io::ReaderStream;

/// The registry routes over `layout`.
pub fn router(layout: Layout) -> Router {
    Router::new()
        .route(
            "/v2/",
            get(|| async { ([(header::CONTENT_TYPE, "application/json")], "{}") }),
        )
        .route("/v2/{*path}", get(serve))
        .with_state(layout)
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = serde_json::json!({"errors": [{"code": code, "message": message}]});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// GET and HEAD (axum answers HEAD with GET's headers and no body).
async fn serve(method: Method, State(layout): State<Layout>, Path(path): Path<String>) -> Response {
    let (name, kind, reference) = match split(&path) {
        Some(parts) => parts,
        None => return error(StatusCode::NOT_FOUND, "NAME_UNKNOWN", "no such endpoint"),
    };
    let digest = match kind {
        "manifests" => match layout.resolve(name, reference) {
            Ok(Some(manifest)) => manifest,
            Ok(None) => {
                return error(
                    StatusCode::NOT_FOUND,
                    "MANIFEST_UNKNOWN",
                    &format!("no image {name}:{reference} in the local image storage"),
                )
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot read the local image storage");
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "UNKNOWN",
                    "see the controlplane's log",
                );
            }
        },
        _ => match layout.blob_path(reference) {
            Some(_) => levers9_image::layout::Descriptor {
                media_type: "application/octet-stream".into(),
                digest: reference.to_owned(),
                size: 0,
                annotations: Default::default(),
            },
            None => return error(StatusCode::NOT_FOUND, "BLOB_UNKNOWN", "no such blob"),
        },
    };
    let Some(path) = layout.blob_path(&digest.digest) else {
        return error(StatusCode::NOT_FOUND, "BLOB_UNKNOWN", "no such blob");
    };
    let file = match tokio::fs::File::open(&path).await {
        Ok(file) => file,
        Err(e) => {
            tracing::error!(error = %e, path = %path.display(), "cannot open a local image blob");
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "UNKNOWN",
                "see the controlplane's log",
            );
        }
    };
    let size = file.metadata().await.map(|m| m.len()).unwrap_or(0);
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        Body::from_stream(ReaderStream::new(file))
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    let value = |s: &str| HeaderValue::from_str(s).unwrap_or(HeaderValue::from_static(""));
    headers.insert(header::CONTENT_TYPE, value(&digest.media_type));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    headers.insert("docker-content-digest", value(&digest.digest));
    response
}

/// `<name>/manifests/<ref>` or `<name>/blobs/<digest>`, the name being any
/// number of path components.
fn split(path: &str) -> Option<(&str, &str, &str)> {
    let (rest, reference) = path.rsplit_once('/')?;
    let (name, kind) = rest.rsplit_once('/')?;
    (!name.is_empty() && matches!(kind, "manifests" | "blobs")).then_some((name, kind, reference))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_name_kind_and_reference() {
        assert_eq!(
            split("levers9/python/manifests/3.11"),
            Some(("levers9/python", "manifests", "3.11"))
        );
        assert_eq!(
            split("a/blobs/sha256:ab"),
            Some(("a", "blobs", "sha256:ab"))
        );
        assert_eq!(split("a/tags/list"), None);
        assert_eq!(split("manifests/x"), None);
    }
}
