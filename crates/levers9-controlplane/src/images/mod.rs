//! The image service: specs resolved to content addresses, looked up in
//! `worker.imageRegistry`, and built once on the build pool.
//!
//! Images live in the repository `<worker.imageRegistry>/images`, tagged
//! with their id. Every step of a build is pushed as an image of its own
//! (the spec of the steps so far), so a later spec that shares a prefix of
//! steps starts from there and reuses its layers.

mod auth;
pub mod build;
mod error;
pub mod registry;
mod replicas;
pub mod spec;

use std::collections::HashMap;
use std::time::Duration;

use levers9_config::ImageServiceConfig;
use levers9_image::RegistryKeychain;
use levers9_sync::Lock;
use tokio::sync::broadcast;

use registry::RegistryClient;
use spec::{Canonical, SpecRequest};

pub use build::BuildEvent;
pub use error::ImageServiceError;

/// Image builds of this replica (one build per image id across replicas:
/// see `replicas`).
pub struct ImageBuilds {
    registry: RegistryClient,
    /// `imageService.registryCredentialsFile` (and ECR tokens).
    keychain: RegistryKeychain,
    /// Why that file could not be read: every image call fails with it.
    credentials_error: Option<String>,
    base_registry: String,
    base_image: String,
    /// Registry host and repository of built images.
    host: String,
    repository: String,
    pool: String,
    timeout: Duration,
    apt_mirror: String,
    apt_suite: String,
    /// Builds running here, by image id: an identical request joins one.
    running: Lock<HashMap<String, broadcast::Sender<BuildEvent>>>,
    /// This replica, as the holder of image build leases.
    holder: String,
}

impl ImageBuilds {
    /// From the configuration; `image_registry` is `worker.imageRegistry`.
    pub fn new(config: &ImageServiceConfig, image_registry: &str) -> Self {
        let trimmed = image_registry.trim_end_matches('/');
        let (host, prefix) = trimmed.split_once('/').unwrap_or((trimmed, ""));
        let repository = if prefix.is_empty() {
            "images".to_owned()
        } else {
            format!("{prefix}/images")
        };
        let (keychain, credentials_error) = registry_keychain(config);
        Self {
            registry: RegistryClient::default().with_auth(auth::Authorizer::new(keychain.clone())),
            keychain,
            credentials_error,
            base_registry: config.runner.base_image_registry.clone(),
            base_image: config.runner.base_image.clone(),
            host: host.to_owned(),
            repository,
            pool: config.build_pool_selector.clone(),
            timeout: Duration::from_secs(config.build_timeout_seconds.max(1)),
            apt_mirror: config.apt_mirror.clone(),
            apt_suite: config.apt_suite.clone(),
            running: Lock::new(HashMap::new()),
            holder: uuid::Uuid::now_v7().to_string(),
        }
    }

    /// Resolves tags and reads built images over plain HTTP on these
    /// registries too (`worker.insecureRegistries`).
    pub fn with_insecure_registries(mut self, registries: &[String]) -> Self {
        self.registry = self.registry.with_insecure_registries(registries);
        self
    }

    fn configured(&self) -> Result<(), ImageServiceError> {
        if let Some(error) = &self.credentials_error {
            return Err(ImageServiceError::Credentials(error.clone()));
        }
        if self.host.is_empty() {
            return Err(ImageServiceError::NoImageRegistry);
        }
        Ok(())
    }

    /// `host/repository@digest` of a built image.
    pub fn reference(&self, digest: &str) -> String {
        format!("{}/{}@{digest}", self.host, self.repository)
    }

    /// The spec with its base image resolved to a digest.
    pub async fn resolve(&self, spec: SpecRequest) -> Result<Canonical, ImageServiceError> {
        self.configured()?;
        let name = if !spec.base_image.is_empty() {
            spec.base_image.clone()
        } else if !spec.python_version.is_empty() {
            let repository = self
                .base_image
                .rsplit_once(':')
                .map_or(self.base_image.as_str(), |(r, _)| r);
            format!("{repository}:{}", spec.python_version)
        } else {
            self.base_image.clone()
        };
        let candidates = spec::base_candidates(&name, &self.base_registry)?;
        for candidate in &candidates {
            let (host, repo, reference) = registry::split(candidate)?;
            if let Some((digest, _)) = self.registry.manifest(host, repo, reference).await? {
                return Ok(Canonical {
                    base: format!("{host}/{repo}@{digest}"),
                    python_version: spec.python_version,
                    steps: spec.steps,
                });
            }
        }
        Err(ImageServiceError::BaseImageMissing {
            name,
            tried: candidates.join(", "),
        })
    }

    /// The digest of image `id`, if it has been built.
    pub async fn existing(&self, id: &str) -> Result<Option<String>, ImageServiceError> {
        self.configured()?;
        Ok(self
            .registry
            .manifest(&self.host, &self.repository, id)
            .await?
            .map(|(digest, _)| digest))
    }

    /// The built image ids (tags that are sha256 hex).
    pub async fn ids(&self) -> Result<Vec<String>, ImageServiceError> {
        self.configured()?;
        let mut ids: Vec<String> = self
            .registry
            .tags(&self.host, &self.repository)
            .await?
            .into_iter()
            .filter(|t| t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()))
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// An image's manifest digest, manifest and config.
    pub async fn describe(
        &self,
        id: &str,
    ) -> Result<(String, serde_json::Value, serde_json::Value), ImageServiceError> {
        self.configured()?;
        let not_found = || ImageServiceError::ImageNotFound {
            id: id.to_owned(),
            repository: format!("{}/{}", self.host, self.repository),
        };
        if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(not_found());
        }
        let (digest, body) = self
            .registry
            .manifest(&self.host, &self.repository, id)
            .await?
            .ok_or_else(not_found)?;
        let corrupt = |source| ImageServiceError::CorruptImage {
            id: id.to_owned(),
            source,
        };
        let manifest: serde_json::Value = serde_json::from_slice(&body).map_err(corrupt)?;
        let config_digest = manifest["config"]["digest"].as_str().unwrap_or_default();
        let config = self
            .registry
            .blob(&self.host, &self.repository, config_digest)
            .await?;
        let config = serde_json::from_slice(&config).map_err(corrupt)?;
        Ok((digest, manifest, config))
    }

    /// Removes image `id` (its manifest and tag; layers other images share
    /// stay, and the registry's garbage collection frees the rest).
    pub async fn delete(&self, id: &str) -> Result<(), ImageServiceError> {
        let (digest, _, _) = self.describe(id).await?;
        self.registry
            .delete(&self.host, &self.repository, &digest)
            .await
    }
}

/// The keychain of `imageService.registryCredentialsFile`, or why it cannot
/// be read (logged once here; image calls then fail with it).
fn registry_keychain(config: &ImageServiceConfig) -> (RegistryKeychain, Option<String>) {
    let path = config.registry_credentials_file.trim();
    if path.is_empty() {
        return (RegistryKeychain::default(), None);
    }
    match RegistryKeychain::from_file(std::path::Path::new(path)) {
        Ok(keychain) => {
            tracing::info!(file = %path, hosts = ?keychain.hosts(), "registry credentials loaded");
            (keychain, None)
        }
        Err(error) => {
            let error = format!("imageService.registryCredentialsFile: {error}");
            tracing::error!(%error, "image builds and tag resolution are off until this is fixed");
            (RegistryKeychain::default(), Some(error))
        }
    }
}

impl ImageBuilds {
    /// The registries a build starting at `start` talks to: where it pulls
    /// from, and `worker.imageRegistry` it pushes to.
    pub(crate) fn build_registry_hosts(&self, start: &str) -> Vec<String> {
        let mut hosts = vec![self.host.clone()];
        if let Ok((host, _, _)) = registry::split(start) {
            if host != self.host {
                hosts.push(host.to_owned());
            }
        }
        hosts
    }

    /// The credentials of `imageService.registryCredentialsFile`, which
    /// build containers get as they go to their worker.
    pub fn keychain(&self) -> &RegistryKeychain {
        &self.keychain
    }
}
