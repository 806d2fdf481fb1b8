//! `levers9 volume cp`: files go in parts of [`SEGMENT_BYTES`], each its own
//! call, so no call runs into the CLI's deadline, and a copy that breaks off
//! (a dropped connection, a controlplane restart, Ctrl-C) picks up where it
//! stopped: uploads from what the controlplane holds (UploadOffset),
//! downloads from the local `.levers9-part` file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use futures::{Stream, StreamExt as _};
use levers9_api::v1::{
    upload_file_request, volume_service_client::VolumeServiceClient, DownloadFileRequest,
    ListFilesRequest, UploadFileRequest, UploadFileResponse, UploadOffsetRequest, UploadStart,
};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use tonic::Code;

use super::progress::Progress;

type Volumes = VolumeServiceClient<crate::client::Authed>;

/// One call's worth: well within the CLI's 30 s call deadline on any link
/// that moves a few MiB/s.
const SEGMENT_BYTES: u64 = 64 << 20;
const CHUNK_BYTES: u64 = 1 << 20;
/// Tries of one part before giving up, with a second more between each.
const ATTEMPTS: u32 = 5;
const REDRAW: Duration = Duration::from_millis(200);
const PART_SUFFIX: &str = ".levers9-part";

/// Whether a failed call is worth another try (the connection or the
/// controlplane, not the request).
fn retryable(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable
            | Code::Unknown
            | Code::DeadlineExceeded
            | Code::Cancelled
            | Code::Aborted
    )
}

/// After a failed try: waits and returns `Ok` when the failure is worth
/// another try and [`ATTEMPTS`] are not used up, else the failure.
async fn retry_or_fail(what: &str, status: tonic::Status, attempt: &mut u32) -> Result<()> {
    if !retryable(&status) || *attempt >= ATTEMPTS {
        return Err(status.into());
    }
    eprintln!(
        "\n{what}: {} (try {attempt} of {ATTEMPTS}); resuming",
        status.message()
    );
    tokio::time::sleep(Duration::from_secs(u64::from(*attempt))).await;
    *attempt += 1;
    Ok(())
}

/// The request stream of one part: its start, then the bytes
/// `[start.offset, end)` of the file at `local`, counted into `sent`.
fn part_stream(
    local: PathBuf,
    start: UploadStart,
    end: u64,
    sent: Arc<AtomicU64>,
) -> impl Stream<Item = UploadFileRequest> + Send + 'static {
    let first = UploadFileRequest {
        kind: Some(upload_file_request::Kind::Start(start.clone())),
    };
    let chunks = futures::stream::unfold(
        (None::<tokio::fs::File>, start.offset),
        move |(file, position)| {
            let local = local.clone();
            let sent = sent.clone();
            async move {
                if position >= end {
                    return None;
                }
                // A read failure ends the part early: the answer then shows
                // no progress, and upload() says so.
                let mut file = match file {
                    Some(file) => file,
                    None => {
                        let mut file = tokio::fs::File::open(&local).await.ok()?;
                        file.seek(std::io::SeekFrom::Start(position)).await.ok()?;
                        file
                    }
                };
                let mut buffer = vec![0; CHUNK_BYTES.min(end - position) as usize];
                file.read_exact(&mut buffer).await.ok()?;
                let next = position + buffer.len() as u64;
                sent.store(next, Ordering::Relaxed);
                let message = UploadFileRequest {
                    kind: Some(upload_file_request::Kind::Data(buffer)),
                };
                Some((message, (Some(file), next)))
            }
        },
    );
    futures::stream::once(async move { first }).chain(chunks)
}

async fn sha256_of(path: &Path) -> Result<String> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut file = std::fs::File::open(&path)?;
        let mut hash = Sha256::new();
        std::io::copy(&mut file, &mut hash)?;
        Ok::<_, std::io::Error>(hex::encode(hash.finalize()))
    })
    .await?
    .context("cannot read the local file to check it")
}

/// Copies the local file `local` to `volume:path` (a path ending in `/`, or
/// empty, keeps the file's name) and checks the stored sha256.
pub async fn upload(volumes: &mut Volumes, local: &Path, volume: &str, path: &str) -> Result<()> {
    let meta = tokio::fs::metadata(local)
        .await
        .with_context(|| format!("cannot read {}", local.display()))?;
    if !meta.is_file() {
        bail!("{} is not a file: copy files one by one", local.display());
    }
    let name = local
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = if path.is_empty() || path.ends_with('/') {
        format!("{path}{name}")
    } else {
        path.to_owned()
    };
    let total = meta.len();
    let label = format!("{} -> {volume}:{path}", local.display());
    let what = label.clone();
    let mut attempt = 1;
    let offset = loop {
        match upload_offset(volumes, volume, &path, total).await {
            Ok(offset) => break offset,
            Err(status) => retry_or_fail(&what, status, &mut attempt).await?,
        }
    };
    let mut progress = Progress::new(label, offset, total);
    let answer = loop {
        match upload_parts(volumes, local, volume, &path, total, &mut progress).await {
            Ok(answer) => break answer,
            Err(status) => retry_or_fail(&what, status, &mut attempt).await?,
        }
    };
    progress.finish();
    let local_sha = sha256_of(local).await?;
    if local_sha != answer.sha256 {
        bail!(
            "{volume}:{path} was stored with sha256 {} but {} has {local_sha}: it was resumed \
             from another file's partial upload; remove it (levers9 volume rm {volume} {path}) \
             and copy again",
            answer.sha256,
            local.display()
        );
    }
    eprintln!("Copied {total} bytes, sha256 {local_sha}");
    Ok(())
}

/// Copies `volume:path` to `local` (a directory keeps the file's name),
/// through `<local>.levers9-part`, which a later run resumes.
pub async fn download(volumes: &mut Volumes, volume: &str, path: &str, local: &Path) -> Result<()> {
    let listed = volumes
        .list_files(ListFilesRequest {
            volume: volume.to_owned(),
            path: path.to_owned(),
        })
        .await?
        .into_inner()
        .entries;
    // A directory lists its entries; a file lists itself, by its path.
    let wanted = levers9_volumes::relative_path(path)?;
    let total = match listed.as_slice() {
        [one] if !one.is_dir && Path::new(&one.path) == wanted => one.size,
        _ => bail!("{volume}:{path} is a directory: copy the files in it one by one"),
    };
    let name = Path::new(path)
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    let local = if local.is_dir() || local.to_string_lossy().ends_with('/') {
        local.join(name)
    } else {
        local.to_owned()
    };
    let mut part_name = local.clone().into_os_string();
    part_name.push(PART_SUFFIX);
    let part = PathBuf::from(part_name);
    let held = tokio::fs::metadata(&part)
        .await
        .map(|m| m.len())
        .unwrap_or(0);
    let mut progress = Progress::new(
        format!("{volume}:{path} -> {}", local.display()),
        held.min(total),
        total,
    );
    let what = format!("{volume}:{path}");
    let mut attempt = 1;
    while let Err(status) = download_parts(volumes, volume, path, &part, total, &mut progress).await
    {
        retry_or_fail(&what, status, &mut attempt).await?;
    }
    tokio::fs::rename(&part, &local)
        .await
        .with_context(|| format!("cannot move {} to {}", part.display(), local.display()))?;
    progress.finish();
    eprintln!("Copied {total} bytes to {}", local.display());
    Ok(())
}

/// Where the upload of `path` resumes: what the controlplane holds, or 0
/// when that is longer than the file (another file's leftovers).
async fn upload_offset(
    volumes: &mut Volumes,
    volume: &str,
    path: &str,
    total: u64,
) -> Result<u64, tonic::Status> {
    let offset = volumes
        .upload_offset(UploadOffsetRequest {
            volume: volume.to_owned(),
            path: path.to_owned(),
        })
        .await?
        .into_inner()
        .offset;
    Ok(if offset > total { 0 } else { offset })
}

/// Sends the file from where the controlplane stands, part by part, until
/// it is complete.
async fn upload_parts(
    volumes: &mut Volumes,
    local: &Path,
    volume: &str,
    path: &str,
    total: u64,
    progress: &mut Progress,
) -> Result<UploadFileResponse, tonic::Status> {
    let mut offset = upload_offset(volumes, volume, path, total).await?;
    let sent = Arc::new(AtomicU64::new(offset));
    loop {
        let end = (offset + SEGMENT_BYTES).min(total);
        let start = UploadStart {
            volume: volume.to_owned(),
            path: path.to_owned(),
            offset,
            total_size: total,
        };
        let call = volumes.upload_file(part_stream(local.to_owned(), start, end, sent.clone()));
        tokio::pin!(call);
        let answer = loop {
            tokio::select! {
                answer = &mut call => break answer?.into_inner(),
                _ = tokio::time::sleep(REDRAW) => progress.set(sent.load(Ordering::Relaxed)),
            }
        };
        progress.set(answer.size);
        if answer.complete {
            return Ok(answer);
        }
        if answer.size <= offset {
            return Err(tonic::Status::data_loss(format!(
                "the local file could not be read past byte {offset}"
            )));
        }
        offset = answer.size;
    }
}

/// Appends the rest of the file to `part`, part by part.
async fn download_parts(
    volumes: &mut Volumes,
    volume: &str,
    path: &str,
    part: &Path,
    total: u64,
    progress: &mut Progress,
) -> Result<(), tonic::Status> {
    let io = |e: std::io::Error| {
        tonic::Status::data_loss(format!("cannot write {}: {e}", part.display()))
    };
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(part)
        .await
        .map_err(io)?;
    let mut offset = file.metadata().await.map_err(io)?.len();
    if offset > total {
        // Another file's leftovers.
        file.set_len(0).await.map_err(io)?;
        offset = 0;
    }
    while offset < total {
        let mut stream = volumes
            .download_file(DownloadFileRequest {
                volume: volume.to_owned(),
                path: path.to_owned(),
                offset,
                length: SEGMENT_BYTES,
            })
            .await?
            .into_inner();
        let before = offset;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
            file.write_all(&chunk.data).await.map_err(io)?;
            offset += chunk.data.len() as u64;
            progress.set(offset);
        }
        file.flush().await.map_err(io)?;
        if offset == before {
            return Err(tonic::Status::data_loss(format!(
                "the file in the volume ended at byte {offset}, before its size of {total}: \
                 it changed during the copy; copy again"
            )));
        }
    }
    file.sync_all().await.map_err(io)
}
