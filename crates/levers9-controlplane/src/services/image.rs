//! ImageService: verify, build, list, show and remove images.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use levers9_api::v1::{
    build_image_event, image_service_server::ImageService, BuildImageEvent, BuildImageRequest,
    DeleteImageRequest, DeleteImageResponse, GetImageRequest, GetImageResponse, ImageSummary,
    ListImagesRequest, ListImagesResponse, VerifyImageRequest, VerifyImageResponse,
};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::auth::{authorized, USERS};
use crate::error::ApiError;
use crate::images::build::{self, BuildEvent, BuildRequest};
use crate::images::spec;
use crate::Shared;

/// The ImageService implementation.
pub struct ImageApi {
    shared: Arc<Shared>,
}

impl ImageApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    async fn summary(&self, id: &str) -> Result<(ImageSummary, String, Vec<String>), ApiError> {
        let images = &self.shared.images;
        let (digest, manifest, config) = images.describe(id).await?;
        let layers: Vec<String> = manifest["layers"]
            .as_array()
            .map(|l| {
                l.iter()
                    .filter_map(|l| l["digest"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let size = manifest["layers"]
            .as_array()
            .map(|l| l.iter().filter_map(|l| l["size"].as_u64()).sum())
            .unwrap_or(0);
        let spec = config["config"]["Labels"][crate::images::spec::SPEC_LABEL]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Ok((
            ImageSummary {
                image_id: id.to_owned(),
                image_ref: images.reference(&digest),
                size_bytes: size,
                layers: u32::try_from(layers.len()).unwrap_or(u32::MAX),
                created_at: config["created"].as_str().unwrap_or_default().to_owned(),
            },
            spec,
            layers,
        ))
    }
}

type BuildStream = Pin<Box<dyn Stream<Item = Result<BuildImageEvent, Status>> + Send>>;

#[tonic::async_trait]
impl ImageService for ImageApi {
    async fn verify_image(
        &self,
        request: Request<VerifyImageRequest>,
    ) -> Result<Response<VerifyImageResponse>, Status> {
        authorized(&request, USERS, "build images")?;
        let images = &self.shared.images;
        let canonical = images
            .resolve(spec::parse(&request.get_ref().spec)?)
            .await?;
        let id = canonical.id();
        let existing = images.existing(&id).await?;
        Ok(Response::new(VerifyImageResponse {
            exists: existing.is_some(),
            image_ref: existing.map(|d| images.reference(&d)).unwrap_or_default(),
            image_id: id,
        }))
    }

    type BuildImageStream = BuildStream;

    async fn build_image(
        &self,
        request: Request<BuildImageRequest>,
    ) -> Result<Response<Self::BuildImageStream>, Status> {
        let caller = authorized(&request, USERS, "build images")?;
        let body = request.into_inner();
        let canonical = self.shared.images.resolve(spec::parse(&body.spec)?).await?;
        let receiver = build::start(
            &self.shared,
            BuildRequest {
                canonical,
                force: body.force_rebuild,
                workspace_id: caller.workspace.id.clone(),
                sdk_digest: body.sdk_digest,
                pip_digest: body.pip_digest,
            },
        );
        let (tx, rx) = mpsc::channel(256);
        tokio::spawn(forward(receiver, tx));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn list_images(
        &self,
        request: Request<ListImagesRequest>,
    ) -> Result<Response<ListImagesResponse>, Status> {
        authorized(&request, USERS, "build images")?;
        let mut images = Vec::new();
        for id in self.shared.images.ids().await? {
            match self.summary(&id).await {
                Ok((summary, _, _)) => images.push(summary),
                // Removed between the listing and the read.
                Err(ApiError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Response::new(ListImagesResponse { images }))
    }

    async fn get_image(
        &self,
        request: Request<GetImageRequest>,
    ) -> Result<Response<GetImageResponse>, Status> {
        authorized(&request, USERS, "build images")?;
        let (image, spec, layer_digests) = self.summary(&request.get_ref().image_id).await?;
        Ok(Response::new(GetImageResponse {
            image: Some(image),
            spec,
            layer_digests,
        }))
    }

    async fn delete_image(
        &self,
        request: Request<DeleteImageRequest>,
    ) -> Result<Response<DeleteImageResponse>, Status> {
        let caller = authorized(&request, USERS, "build images")?;
        let id = &request.get_ref().image_id;
        self.shared.images.delete(id).await?;
        tracing::info!(image_id = %id, workspace_id = %caller.workspace.id, "image removed");
        Ok(Response::new(DeleteImageResponse {}))
    }
}

/// Passes a build's events to one caller until it ends (or the caller goes:
/// the build goes on for the others, and for the cache).
async fn forward(
    mut receiver: broadcast::Receiver<BuildEvent>,
    tx: mpsc::Sender<Result<BuildImageEvent, Status>>,
) {
    loop {
        let item = match receiver.recv().await {
            Ok(BuildEvent::Event(event)) => {
                let last = matches!(event.kind, Some(build_image_event::Kind::Done(_)));
                if tx.send(Ok(event)).await.is_err() || last {
                    return;
                }
                continue;
            }
            Ok(BuildEvent::Failed(message)) => Err(ApiError::FailedPrecondition(message).into()),
            // A slow reader missed log lines; the end still comes.
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => Err(ApiError::Unavailable(
                "the build stopped without a result: try again".into(),
            )
            .into()),
        };
        let _ = tx.send(item).await;
        return;
    }
}
