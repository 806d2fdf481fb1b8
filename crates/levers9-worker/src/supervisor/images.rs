//! Where the supervisor's containers get their root file systems: the
//! image store, or in the supervisor's tests a stand-in (they have neither
//! a registry nor the root that an overlay mount needs).

use async_trait::async_trait;
use levers9_ids::ContainerId;
use levers9_image::{Image, ImageError, ImageStore, Rootfs};

/// Pulls images, and prepares and releases root file systems, as
/// [`ImageStore`] does.
#[async_trait]
pub(crate) trait Images: Send + Sync {
    /// See [`ImageStore::pull`].
    async fn pull(&self, reference: &str) -> Result<Image, ImageError>;

    /// See [`ImageStore::prepare_rootfs`].
    async fn prepare_rootfs(
        &self,
        image: &Image,
        container_id: &ContainerId,
    ) -> Result<Rootfs, ImageError>;

    /// See [`ImageStore::release`].
    async fn release(&self, container_id: &ContainerId) -> Result<(), ImageError>;
}

#[async_trait]
impl Images for ImageStore {
    async fn pull(&self, reference: &str) -> Result<Image, ImageError> {
        ImageStore::pull(self, reference).await
    }

    async fn prepare_rootfs(
        &self,
        image: &Image,
        container_id: &ContainerId,
    ) -> Result<Rootfs, ImageError> {
        ImageStore::prepare_rootfs(self, image, container_id).await
    }

    async fn release(&self, container_id: &ContainerId) -> Result<(), ImageError> {
        ImageStore::release(self, container_id).await
    }
}
