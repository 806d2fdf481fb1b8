//! The push half of the OCI distribution API over the local image storage:
//! blob uploads (`POST`, `PATCH`, `PUT …?digest=`, cross-repository mounts)
//! and manifest `PUT`s, which is what an image build needs.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use levers9_image::layout::{Layout, MANIFEST_MEDIA_TYPE};
use tokio::io::AsyncWriteExt as _;

use super::{error, internal};

/// Manifests are small; anything past this is not one.
const MANIFEST_LIMIT: usize = 4 << 20;

type Params = Query<HashMap<String, String>>;

/// What a push path names.
#[derive(Debug, PartialEq, Eq)]
enum Target<'a> {
    /// `<name>/blobs/uploads/`: start an upload.
    NewUpload(&'a str),
    /// `<name>/blobs/uploads/<id>`: an upload under way.
    Upload(&'a str, &'a str),
    /// `<name>/manifests/<reference>`.
    Manifest(&'a str, &'a str),
}

fn target(path: &str) -> Option<Target<'_>> {
    if let Some(name) = path
        .strip_suffix("/blobs/uploads/")
        .or_else(|| path.strip_suffix("/blobs/uploads"))
    {
        return (!name.is_empty()).then_some(Target::NewUpload(name));
    }
    let (rest, last) = path.rsplit_once('/')?;
    if let Some(name) = rest.strip_suffix("/blobs/uploads") {
        return (!name.is_empty() && !last.is_empty()).then_some(Target::Upload(name, last));
    }
    let name = rest.strip_suffix("/manifests")?;
    (!name.is_empty() && !last.is_empty()).then_some(Target::Manifest(name, last))
}

fn unsupported() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "UNSUPPORTED",
        "not a push endpoint of this registry",
    )
}

fn created(location: String, digest: &str) -> Response {
    let mut response = StatusCode::CREATED.into_response();
    set(response.headers_mut(), header::LOCATION, &location);
    set(response.headers_mut(), "docker-content-digest", digest);
    response
}

fn accepted(name: &str, id: &str, size: u64) -> Response {
    let mut response = StatusCode::ACCEPTED.into_response();
    let headers = response.headers_mut();
    set(
        headers,
        header::LOCATION,
        &format!("/v2/{name}/blobs/uploads/{id}"),
    );
    set(headers, "docker-upload-uuid", id);
    set(
        headers,
        header::RANGE,
        &format!("0-{}", size.saturating_sub(1)),
    );
    response
}

fn set(headers: &mut HeaderMap, name: impl header::IntoHeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        headers.insert(name, value);
    }
}

fn refused(e: impl std::fmt::Display) -> Response {
    error(StatusCode::BAD_REQUEST, "DIGEST_INVALID", &e.to_string())
}

/// `POST <name>/blobs/uploads/`: a mount of a blob the storage has, a
/// monolithic upload (`?digest=`), or the start of an upload.
pub(super) async fn post(
    State(layout): State<Layout>,
    Path(path): Path<String>,
    Query(params): Params,
    body: Body,
) -> Response {
    let Some(Target::NewUpload(name)) = target(&path) else {
        return unsupported();
    };
    // Every repository shares one blob store, so a mount is only a check.
    if let Some(digest) = params.get("mount") {
        if layout.blob_path(digest).is_some() {
            return created(format!("/v2/{name}/blobs/{digest}"), digest);
        }
    }
    let id = match layout.start_upload() {
        Ok(id) => id,
        Err(e) => return internal(e),
    };
    match params.get("digest") {
        Some(digest) => finish(layout, name, &id, digest, body).await,
        None => accepted(name, &id, 0),
    }
}

/// `PATCH <name>/blobs/uploads/<id>`: more bytes of an upload.
pub(super) async fn patch(
    State(layout): State<Layout>,
    Path(path): Path<String>,
    body: Body,
) -> Response {
    let Some(Target::Upload(name, id)) = target(&path) else {
        return unsupported();
    };
    match append(&layout, id, body).await {
        Ok(size) => accepted(name, id, size),
        Err(response) => response,
    }
}

/// `PUT <name>/blobs/uploads/<id>?digest=` ends an upload;
/// `PUT <name>/manifests/<reference>` stores and names a manifest.
pub(super) async fn put(
    State(layout): State<Layout>,
    Path(path): Path<String>,
    Query(params): Params,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match target(&path) {
        Some(Target::Upload(name, id)) => match params.get("digest") {
            Some(digest) => finish(layout, name, id, digest, body).await,
            None => error(
                StatusCode::BAD_REQUEST,
                "DIGEST_INVALID",
                "ending an upload needs ?digest=sha256:…",
            ),
        },
        Some(Target::Manifest(name, reference)) => {
            manifest(layout, name, reference, &headers, body).await
        }
        _ => unsupported(),
    }
}

/// Appends `body` to the upload `id`; its size after.
async fn append(layout: &Layout, id: &str, body: Body) -> Result<u64, Response> {
    let Some(path) = layout.upload_path(id) else {
        return Err(error(
            StatusCode::NOT_FOUND,
            "BLOB_UPLOAD_UNKNOWN",
            "no such upload: start it again",
        ));
    };
    let mut file = tokio::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .await
        .map_err(internal)?;
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            error(
                StatusCode::BAD_REQUEST,
                "BLOB_UPLOAD_INVALID",
                &e.to_string(),
            )
        })?;
        file.write_all(&chunk).await.map_err(internal)?;
    }
    file.flush().await.map_err(internal)?;
    let size = file.metadata().await.map_err(internal)?.len();
    Ok(size)
}

async fn finish(layout: Layout, name: &str, id: &str, digest: &str, body: Body) -> Response {
    if let Err(response) = append(&layout, id, body).await {
        return response;
    }
    let (id, wanted) = (id.to_owned(), digest.to_owned());
    match tokio::task::spawn_blocking(move || layout.finish_upload(&id, &wanted)).await {
        Ok(Ok(blob)) => created(format!("/v2/{name}/blobs/{}", blob.digest), &blob.digest),
        Ok(Err(e)) => refused(e),
        Err(e) => internal(e),
    }
}

async fn manifest(
    layout: Layout,
    name: &str,
    reference: &str,
    headers: &HeaderMap,
    body: Body,
) -> Response {
    let bytes = match axum::body::to_bytes(body, MANIFEST_LIMIT).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "MANIFEST_INVALID",
                "a manifest is at most 4 MiB",
            )
        }
    };
    if serde_json::from_slice::<serde_json::Value>(&bytes).is_err() {
        return error(
            StatusCode::BAD_REQUEST,
            "MANIFEST_INVALID",
            "the manifest is not JSON",
        );
    }
    let media_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or(MANIFEST_MEDIA_TYPE)
        .to_owned();
    let stored = match layout.put_blob(&media_type, &bytes) {
        Ok(stored) => stored,
        Err(e) => return internal(e),
    };
    // A digest reference names the manifest only if it is that manifest.
    let tag = if reference.starts_with("sha256:") {
        if reference != stored.digest {
            return refused(format!(
                "the manifest hashes to {}, not {reference}",
                stored.digest
            ));
        }
        format!("{name}@{reference}")
    } else {
        format!("{name}:{reference}")
    };
    match layout.tag(&tag, &stored) {
        Ok(()) => created(
            format!("/v2/{name}/manifests/{}", stored.digest),
            &stored.digest,
        ),
        Err(e) => internal(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_paths_name_what_they_push() {
        assert_eq!(
            target("images/blobs/uploads/"),
            Some(Target::NewUpload("images"))
        );
        assert_eq!(target("a/b/blobs/uploads"), Some(Target::NewUpload("a/b")));
        assert_eq!(
            target("images/blobs/uploads/uAbc"),
            Some(Target::Upload("images", "uAbc"))
        );
        assert_eq!(
            target("images/manifests/step1"),
            Some(Target::Manifest("images", "step1"))
        );
        assert_eq!(target("blobs/uploads/"), None);
        assert_eq!(target("images/blobs/sha256:ab"), None);
        assert_eq!(target("images/tags/list"), None);
    }
}
