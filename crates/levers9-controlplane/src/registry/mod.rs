//! The local image storage served as a registry: the pull half of the OCI
//! distribution API (`/v2/<name>/manifests/<ref>`, `/v2/<name>/blobs/<digest>`,
//! `/v2/<name>/tags/list`) from `imageService.localImages`, and with
//! `imageService.localImagesWritable` the push half too (`push`).
//!
//! It is what lets `levers9 up` run functions on a machine with no registry:
//! its worker pulls the base image from here like from any registry, and its
//! image builds push here. No token is asked for: it is off unless
//! configured, and writable only on a loopback-bound controlplane.

mod push;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use levers9_image::layout::Layout;
use tokio_util::io::ReaderStream;

/// The local image storage and whether it takes pushes.
#[derive(Debug, Clone)]
pub struct LocalImages {
    /// Where the images are.
    pub layout: Layout,
    /// `imageService.localImagesWritable`.
    pub writable: bool,
}

/// The registry routes; push routes only when writable.
pub fn router(LocalImages { layout, writable }: LocalImages) -> Router {
    let mut routes = get(serve);
    if writable {
        routes = routes.post(push::post).patch(push::patch).put(push::put);
    }
    Router::new()
        .route(
            "/v2/",
            get(|| async { ([(header::CONTENT_TYPE, "application/json")], "{}") }),
        )
        .route("/v2/{*path}", routes)
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
    if let Some(repository) = path.strip_suffix("/tags/list") {
        return tags(&layout, repository);
    }
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
            Err(e) => return internal(e),
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
        Err(e) => return internal(format!("{}: {e}", path.display())),
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

fn tags(layout: &Layout, repository: &str) -> Response {
    match layout.tags(repository) {
        Ok(tags) => {
            axum::Json(serde_json::json!({"name": repository, "tags": tags})).into_response()
        }
        Err(e) => internal(e),
    }
}

/// A failure of the storage itself: logged, and the client told where to
/// look.
fn internal(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "cannot read or write the local image storage");
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "UNKNOWN",
        "see the controlplane's log",
    )
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
