//! VolumeService: the caller's workspace's volumes, and files moved in and
//! out of them through the controlplane, which has the volumes mounted.
//! Uploads land in a hidden partial file beside their target and take its
//! name only when complete, so a broken-off upload resumes and a half file
//! is never read as the whole.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use levers9_api::v1::{
    upload_file_request, volume_service_server::VolumeService, CreateVolumeRequest,
    CreateVolumeResponse, DeleteVolumeRequest, DeleteVolumeResponse, DownloadFileRequest,
    DownloadFileResponse, FileEntry, ListFilesRequest, ListFilesResponse, ListVolumesRequest,
    ListVolumesResponse, RemoveFileRequest, RemoveFileResponse, UploadFileRequest,
    UploadFileResponse, UploadOffsetRequest, UploadOffsetResponse, UploadStart,
};
use levers9_volumes::Owner;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status, Streaming};

use crate::auth::{authorized, Caller, USERS};
use crate::error::ApiError;
use crate::{sealing, Shared};

/// Download chunk size: large enough for throughput, far below the gRPC
/// message limit.
const CHUNK_BYTES: usize = 1 << 20;
/// Partial uploads are hidden files of this prefix beside their target.
const PARTIAL_PREFIX: &str = ".levers9-upload.";

/// The VolumeService implementation.
pub struct VolumeApi {
    shared: Arc<Shared>,
}

impl VolumeApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// The caller's workspace as its volumes' owner, with its own storage
    /// credentials opened for this one call when it has some.
    async fn owner<'a>(&self, caller: &'a Caller) -> Result<Owner<'a>, ApiError> {
        let workspace_id = caller.workspace.id.as_str();
        let storage = if self.shared.volumes.is_juicefs() {
            sealing::open_storage(
                self.shared.sealed.as_ref(),
                &self.shared.keyring,
                workspace_id,
            )
            .await?
            .map(|(credentials, _)| sealing::volume_storage(credentials))
        } else {
            None
        };
        Ok(Owner {
            workspace_id,
            storage,
        })
    }

    /// The path inside the caller's volume, and the volume's directory.
    async fn path(
        &self,
        caller: &Caller,
        volume: &str,
        path: &str,
    ) -> Result<(PathBuf, PathBuf), ApiError> {
        let dir = self
            .shared
            .volumes
            .dir(self.owner(caller).await?, volume)
            .await?;
        let relative = levers9_volumes::relative_path(path)?;
        Ok((dir.join(&relative), dir))
    }
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> ApiError {
    move |source| levers9_volumes::VolumeError::Io { what, source }.into()
}

/// Where the partial upload of `target`, a file in the volume at `root`,
/// is kept.
fn partial_of(target: &Path, root: &Path) -> Result<PathBuf, ApiError> {
    let name = target
        .file_name()
        .filter(|_| target != root)
        .ok_or_else(|| {
            ApiError::InvalidArgument("upload to a file path, not the volume's root".into())
        })?;
    Ok(target.with_file_name(format!("{PARTIAL_PREFIX}{}", name.to_string_lossy())))
}

async fn entry(root: &Path, path: &Path) -> Result<FileEntry, ApiError> {
    let meta = tokio::fs::metadata(path)
        .await
        .map_err(io(format!("read {}", path.display())))?;
    let modified = meta
        .modified()
        .map(chrono::DateTime::<chrono::Utc>::from)
        .map(|t| t.to_rfc3339())
        .unwrap_or_default();
    Ok(FileEntry {
        path: path
            .strip_prefix(root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned(),
        is_dir: meta.is_dir(),
        size: if meta.is_dir() { 0 } else { meta.len() },
        modified_at: modified,
    })
}

async fn sha256_of(path: &Path) -> Result<String, ApiError> {
    let mut file = tokio::fs::File::open(path)
        .await
        .map_err(io(format!("read {}", path.display())))?;
    let mut hash = Sha256::new();
    let mut buffer = vec![0; CHUNK_BYTES];
    loop {
        let n = file
            .read(&mut buffer)
            .await
            .map_err(io(format!("read {}", path.display())))?;
        if n == 0 {
            return Ok(hex::encode(hash.finalize()));
        }
        hash.update(&buffer[..n]);
    }
}

type DownloadStream = Pin<Box<dyn Stream<Item = Result<DownloadFileResponse, Status>> + Send>>;

#[tonic::async_trait]
impl VolumeService for VolumeApi {
    async fn create_volume(
        &self,
        request: Request<CreateVolumeRequest>,
    ) -> Result<Response<CreateVolumeResponse>, Status> {
        let caller = authorized(&request, USERS, "use volumes")?;
        let name = request.into_inner().name;
        self.shared
            .volumes
            .create(self.owner(&caller).await?, &name)
            .await
            .map_err(ApiError::from)?;
        tracing::info!(workspace_id = %caller.workspace.id, %name, "volume created");
        Ok(Response::new(CreateVolumeResponse {}))
    }

    async fn list_volumes(
        &self,
        request: Request<ListVolumesRequest>,
    ) -> Result<Response<ListVolumesResponse>, Status> {
        let caller = authorized(&request, USERS, "use volumes")?;
        let names = self
            .shared
            .volumes
            .list(self.owner(&caller).await?)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(ListVolumesResponse { names }))
    }

    async fn delete_volume(
        &self,
        request: Request<DeleteVolumeRequest>,
    ) -> Result<Response<DeleteVolumeResponse>, Status> {
        let caller = authorized(&request, USERS, "use volumes")?;
        let name = request.into_inner().name;
        self.shared
            .volumes
            .delete(self.owner(&caller).await?, &name)
            .await
            .map_err(ApiError::from)?;
        tracing::info!(workspace_id = %caller.workspace.id, %name, "volume deleted");
        Ok(Response::new(DeleteVolumeResponse {}))
    }

    async fn list_files(
        &self,
        request: Request<ListFilesRequest>,
    ) -> Result<Response<ListFilesResponse>, Status> {
        let caller = authorized(&request, USERS, "use volumes")?;
        let body = request.into_inner();
        let (path, root) = self.path(&caller, &body.volume, &body.path).await?;
        let top = entry(&root, &path).await?;
        if !top.is_dir {
            return Ok(Response::new(ListFilesResponse { entries: vec![top] }));
        }
        let mut entries = Vec::new();
        let mut dir = tokio::fs::read_dir(&path)
            .await
            .map_err(io(format!("list {:?}", body.path)))
            .map_err(Status::from)?;
        while let Some(item) = dir
            .next_entry()
            .await
            .map_err(io(format!("list {:?}", body.path)))
            .map_err(Status::from)?
        {
            if item
                .file_name()
                .to_string_lossy()
                .starts_with(PARTIAL_PREFIX)
            {
                continue;
            }
            entries.push(entry(&root, &item.path()).await?);
        }
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Response::new(ListFilesResponse { entries }))
    }

    async fn remove_file(
        &self,
        request: Request<RemoveFileRequest>,
    ) -> Result<Response<RemoveFileResponse>, Status> {
        let caller = authorized(&request, USERS, "use volumes")?;
        let body = request.into_inner();
        let (path, root) = self.path(&caller, &body.volume, &body.path).await?;
        if path == root {
            return Err(ApiError::InvalidArgument(
                "that is the whole volume: delete it with `levers9 volume delete`".into(),
            )
            .into());
        }
        let what = format!("remove {:?}", body.path);
        if entry(&root, &path).await?.is_dir {
            if !body.recursive {
                return Err(ApiError::InvalidArgument(format!(
                    "{:?} is a directory: pass --recursive to remove it and what is in it",
                    body.path
                ))
                .into());
            }
            tokio::fs::remove_dir_all(&path).await.map_err(io(what))?;
        } else {
            tokio::fs::remove_file(&path).await.map_err(io(what))?;
        }
        Ok(Response::new(RemoveFileResponse {}))
    }

    async fn upload_offset(
        &self,
        request: Request<UploadOffsetRequest>,
    ) -> Result<Response<UploadOffsetResponse>, Status> {
        let caller = authorized(&request, USERS, "use volumes")?;
        let body = request.into_inner();
        let (path, root) = self.path(&caller, &body.volume, &body.path).await?;
        let offset = match tokio::fs::metadata(partial_of(&path, &root)?).await {
            Ok(meta) => meta.len(),
            Err(_) => 0,
        };
        Ok(Response::new(UploadOffsetResponse { offset }))
    }

    async fn upload_file(
        &self,
        request: Request<Streaming<UploadFileRequest>>,
    ) -> Result<Response<UploadFileResponse>, Status> {
        let caller = authorized(&request, USERS, "use volumes")?;
        let mut stream = request.into_inner();
        let Some(Ok(UploadFileRequest {
            kind: Some(upload_file_request::Kind::Start(start)),
        })) = stream.next().await
        else {
            return Err(ApiError::InvalidArgument(
                "an upload starts with an UploadStart message".into(),
            )
            .into());
        };
        let UploadStart {
            volume,
            path: wanted,
            offset,
            total_size,
        } = start;
        let (path, root) = self.path(&caller, &volume, &wanted).await?;
        let partial = partial_of(&path, &root)?;
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(io(format!("create the directory of {wanted:?}")))?;
        }
        let what = format!("write {wanted:?}");
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(&partial)
            .await
            .map_err(io(what.clone()))?;
        let held = file.metadata().await.map_err(io(what.clone()))?.len();
        if offset > held {
            return Err(ApiError::InvalidArgument(format!(
                "the upload of {wanted:?} resumes at byte {offset}, but only {held} are here: \
                 ask UploadOffset where to resume"
            ))
            .into());
        }
        file.set_len(offset).await.map_err(io(what.clone()))?;
        file.seek(std::io::SeekFrom::Start(offset))
            .await
            .map_err(io(what.clone()))?;
        let mut written = offset;
        while let Some(message) = stream.next().await {
            let Some(upload_file_request::Kind::Data(data)) = message?.kind else {
                return Err(ApiError::InvalidArgument(
                    "an upload sends one UploadStart, then only data".into(),
                )
                .into());
            };
            written += data.len() as u64;
            if written > total_size {
                return Err(ApiError::InvalidArgument(format!(
                    "the upload of {wanted:?} sent more than its total_size of {total_size} bytes"
                ))
                .into());
            }
            file.write_all(&data).await.map_err(io(what.clone()))?;
        }
        file.flush().await.map_err(io(what.clone()))?;
        file.sync_all().await.map_err(io(what.clone()))?;
        drop(file);
        if written < total_size {
            // Kept for the next call, which continues at `written`.
            return Ok(Response::new(UploadFileResponse {
                size: written,
                sha256: String::new(),
                complete: false,
            }));
        }
        tokio::fs::rename(&partial, &path).await.map_err(io(what))?;
        let sha256 = sha256_of(&path).await?;
        tracing::info!(workspace_id = %caller.workspace.id, %volume, path = %wanted, size = written, "file uploaded");
        Ok(Response::new(UploadFileResponse {
            size: written,
            sha256,
            complete: true,
        }))
    }

    type DownloadFileStream = DownloadStream;

    async fn download_file(
        &self,
        request: Request<DownloadFileRequest>,
    ) -> Result<Response<DownloadStream>, Status> {
        let caller = authorized(&request, USERS, "use volumes")?;
        let body = request.into_inner();
        let (path, _) = self.path(&caller, &body.volume, &body.path).await?;
        let what = format!("read {:?}", body.path);
        let mut file = tokio::fs::File::open(&path)
            .await
            .map_err(io(what.clone()))?;
        let meta = file.metadata().await.map_err(io(what.clone()))?;
        if meta.is_dir() {
            return Err(ApiError::InvalidArgument(format!(
                "{:?} is a directory: copy the files in it one by one",
                body.path
            ))
            .into());
        }
        let total_size = meta.len();
        let start = body.offset.min(total_size);
        file.seek(std::io::SeekFrom::Start(start))
            .await
            .map_err(io(what.clone()))?;
        let mut left = match body.length {
            0 => total_size - start,
            length => length.min(total_size - start),
        };
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tokio::spawn(async move {
            let mut buffer = vec![0; CHUNK_BYTES];
            while left > 0 {
                let want = buffer
                    .len()
                    .min(usize::try_from(left).unwrap_or(usize::MAX));
                let message = match file.read(&mut buffer[..want]).await {
                    Ok(0) => return,
                    Ok(n) => Ok(DownloadFileResponse {
                        total_size,
                        data: buffer[..n].to_vec(),
                    }),
                    Err(source) => Err(Status::from(ApiError::from(
                        levers9_volumes::VolumeError::Io {
                            what: what.clone(),
                            source,
                        },
                    ))),
                };
                let failed = message.is_err();
                if let Ok(chunk) = &message {
                    left -= chunk.data.len() as u64;
                }
                if tx.send(message).await.is_err() || failed {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}
