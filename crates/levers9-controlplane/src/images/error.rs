//! What can go wrong resolving, building, reading and removing images.

use levers9_state::StateError;

use crate::fleet::FleetError;

/// An error of the images domain; `crate::error` maps it to the wire.
#[derive(Debug, thiserror::Error)]
pub enum ImageServiceError {
    /// `imageService.registryCredentialsFile` cannot be read, or has no
    /// usable entry for a registry; the message says which.
    #[error("{0}")]
    Credentials(String),
    /// `worker.imageRegistry`, where built images go, is not set.
    #[error(
        "worker.imageRegistry is not set: images are pushed there, so set it \
         (LEVERS9_IMAGE_REGISTRY) to build images"
    )]
    NoImageRegistry,
    /// A spec from the SDK that cannot be built; the message says why.
    #[error("{0}")]
    InvalidSpec(String),
    /// A reference without a registry or repository.
    #[error("{0:?} is not a full image reference (registry/repository:tag)")]
    InvalidReference(String),
    /// A base image without a registry, and no default registry to look in.
    #[error(
        "base image {0:?} names no registry and imageService.runner.baseImageRegistry is \
         not set: set it (LEVERS9_BASE_IMAGE_REGISTRY) or give a full reference"
    )]
    BaseImageWithoutRegistry(String),
    /// The base image is in none of the places it could be.
    #[error(
        "base image {name:?} is not in the registry (tried {tried}): push it there, or set \
         imageService.runner.baseImageRegistry to a registry that has it"
    )]
    BaseImageMissing {
        /// The base image as the spec names it.
        name: String,
        /// The references looked up, comma-separated.
        tried: String,
    },
    /// No built image has this id.
    #[error("no image {id:?} in {repository}: see levers9 image list")]
    ImageNotFound {
        /// The id asked for.
        id: String,
        /// `host/repository` of `worker.imageRegistry`.
        repository: String,
    },
    /// An image's manifest or config is not JSON.
    #[error("corrupt record: image {id}: {source}")]
    CorruptImage {
        /// The image.
        id: String,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// A build request without an object the build needs.
    #[error("BuildImage needs {0}: upload it as an object and pass its digest (the SDK does)")]
    MissingBuildObject(String),
    /// The build pool does not exist.
    #[error(
        "no pool {0:?} to build images in: add a worker pool of that name \
         (worker.pools) or set imageService.buildPoolSelector"
    )]
    NoBuildPool(String),
    /// A registry answered 401 or 403 to a call.
    #[error(
        "registry {host} refused {what}: give the controlplane credentials for {host} \
         (imageService.registryCredentialsFile) or check them"
    )]
    RegistryRefused {
        /// The registry.
        host: String,
        /// The call, e.g. `reading manifest ...`.
        what: String,
    },
    /// A registry's token server refused the credentials.
    #[error(
        "registry {host} refused the credentials for {scope}: check the entry of \
         {host} in imageService.registryCredentialsFile"
    )]
    CredentialsRefused {
        /// The registry.
        host: String,
        /// The scope the token was asked for.
        scope: String,
    },
    /// A registry that does not allow deleting manifests.
    #[error("registry {0} does not allow deletes: enable storage.delete in its configuration")]
    DeletesDisabled(String),
    /// A registry could not be reached or answered something unexpected.
    #[error("registry {host}: {what}: {detail}")]
    RegistryUnavailable {
        /// The registry.
        host: String,
        /// The call.
        what: String,
        /// What went wrong.
        detail: String,
    },
    /// The hot state failed.
    #[error("hot state: {0}")]
    State(#[from] StateError),
    /// The fleet (the build container, its pool, its log) failed.
    #[error(transparent)]
    Fleet(#[from] FleetError),
}
