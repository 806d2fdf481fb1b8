//! The workspace's volumes, read-only: their names, the entries of a
//! directory, and a file's bytes. The browser reaches files only here,
//! never storage itself.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures::StreamExt as _;
use levers9_api::v1::{DownloadFileRequest, FileEntry, ListFilesRequest, ListVolumesRequest};
use serde::Deserialize;

use crate::controlplane::call;
use crate::error::ApiError;
use crate::guard::SignedIn;
use crate::AppState;

pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/volumes", get(list_volumes))
        .route("/api/volumes/{name}/files", get(list_files))
        .route("/api/volumes/{name}/file", get(download))
}

async fn list_volumes(
    State(s): State<Arc<AppState>>,
    _: SignedIn,
) -> Result<Json<Vec<String>>, ApiError> {
    let reply =
        s.cp.volumes()
            .list_volumes(call(ListVolumesRequest {}))
            .await?;
    Ok(Json(reply.into_inner().names))
}

#[derive(Deserialize)]
struct At {
    #[serde(default)]
    path: String,
}

/// A directory's entries (the root when `path` is empty).
async fn list_files(
    State(s): State<Arc<AppState>>,
    _: SignedIn,
    Path(volume): Path<String>,
    Query(at): Query<At>,
) -> Result<Json<Vec<FileEntry>>, ApiError> {
    let reply =
        s.cp.volumes()
            .list_files(call(ListFilesRequest {
                volume,
                path: at.path,
            }))
            .await?;
    Ok(Json(reply.into_inner().entries))
}

/// A file, as a download: the bytes never render as a page of the API's
/// origin (attachment, no sniffing, a sandboxing policy).
async fn download(
    State(s): State<Arc<AppState>>,
    _: SignedIn,
    Path(volume): Path<String>,
    Query(at): Query<At>,
) -> Result<Response, ApiError> {
    if at.path.trim_matches('/').is_empty() {
        return Err(ApiError::BadRequest(
            "name a file: ?path=dir/file.txt".into(),
        ));
    }
    let name = at
        .path
        .rsplit('/')
        .find(|p| !p.is_empty())
        .unwrap_or("file")
        .to_owned();
    // No deadline: a large file takes as long as it takes.
    let mut stream =
        s.cp.volumes()
            .download_file(DownloadFileRequest {
                volume,
                path: at.path,
                offset: 0,
                length: 0,
            })
            .await?
            .into_inner();
    // The first message settles the status (a missing file is a 404, not
    // an empty 200).
    let first = stream.message().await?;
    let total = first.as_ref().map_or(0, |m| m.total_size);
    let head = futures::stream::iter(first.map(|m| Ok(Bytes::from(m.data))));
    let rest = stream.map(|m| {
        m.map(|m| Bytes::from(m.data))
            .map_err(|status| std::io::Error::other(status.message().to_owned()))
    });
    let body = Body::from_stream(head.chain(rest));
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (header::CONTENT_LENGTH, total.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{}\"", ascii_filename(&name)),
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
            (header::CONTENT_SECURITY_POLICY, "sandbox".to_owned()),
        ],
        body,
    )
        .into_response())
}

/// The name in a quoted header value: printable ASCII, no quote or backslash.
fn ascii_filename(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
