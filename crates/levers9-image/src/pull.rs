//! Talking to registries: choosing HTTP or HTTPS, authenticating, applying
//! timeouts, and verifying every byte received against its digest before it
//! is allowed into the cache.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use levers9_sync::Lock;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{DigestError, OciDistributionError, OciErrorCode};
use oci_client::manifest::{
    OciDescriptor, IMAGE_MANIFEST_LIST_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE,
    OCI_IMAGE_INDEX_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE,
};
use oci_client::secrets::RegistryAuth;
use oci_client::Client;
use sha2::{Digest as _, Sha256};
use tokio::io::AsyncWriteExt;

use crate::credentials::{RegistryCredentials, RegistryKeychain};
use crate::error::{ImageError, Result};
use crate::image::BlobRef;
use crate::reference::{is_loopback_host, Digest, ImageReference};

/// How to reach registries.
#[derive(Clone, Debug)]
pub(crate) struct RegistrySettings {
    pub keychain: RegistryKeychain,
    pub insecure_registries: Vec<String>,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
}

/// A registry client per registry host, plus download counters.
pub(crate) struct Registries {
    settings: RegistrySettings,
    /// Per registry: the client and a hash of the credentials it was
    /// made with (oci-client keeps the first credentials it is given, so a
    /// refreshed ECR token needs a new client).
    clients: Lock<HashMap<String, (Client, [u8; 32])>>,
    manifest_fetches: AtomicU64,
    blob_downloads: AtomicU64,
}

const MANIFEST_TYPES: &[&str] = &[
    OCI_IMAGE_MEDIA_TYPE,
    OCI_IMAGE_INDEX_MEDIA_TYPE,
    IMAGE_MANIFEST_MEDIA_TYPE,
    IMAGE_MANIFEST_LIST_MEDIA_TYPE,
];

impl Registries {
    pub fn new(settings: RegistrySettings) -> Self {
        Registries {
            settings,
            clients: Lock::new(HashMap::new()),
            manifest_fetches: AtomicU64::new(0),
            blob_downloads: AtomicU64::new(0),
        }
    }

    pub fn manifest_fetches(&self) -> u64 {
        self.manifest_fetches.load(Ordering::Relaxed)
    }

    pub fn blob_downloads(&self) -> u64 {
        self.blob_downloads.load(Ordering::Relaxed)
    }

    /// Plain HTTP only for this machine or registries explicitly listed as
    /// insecure: anything else could be intercepted on the network.
    fn uses_plain_http(&self, registry: &str) -> bool {
        is_loopback_host(registry)
            || self
                .settings
                .insecure_registries
                .iter()
                .any(|r| r == registry)
    }

    /// One client per registry, because oci-client picks the protocol per
    /// client and caches tokens in it; and the credentials to use with it.
    async fn client(&self, r: &ImageReference) -> Result<(Client, RegistryAuth)> {
        let registry = r.oci().resolve_registry().to_owned();
        let credentials = self
            .settings
            .keychain
            .credentials_for(r.registry())
            .await
            .map_err(|e| ImageError::Credentials {
                reference: r.to_string(),
                registry: r.registry().to_owned(),
                reason: e.to_string(),
            })?;
        let fingerprint = fingerprint(&credentials);
        let mut clients = self.clients.lock();
        if let Some((client, made_with)) = clients.get(&registry) {
            if *made_with == fingerprint {
                return Ok((client.clone(), to_auth(&credentials)));
            }
        }
        let protocol = if self.uses_plain_http(&registry) {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        };
        let client = Client::new(ClientConfig {
            protocol,
            connect_timeout: Some(self.settings.connect_timeout),
            // A stalled body read fails instead of hanging forever.
            read_timeout: Some(self.settings.request_timeout),
            ..ClientConfig::default()
        });
        clients.insert(registry, (client.clone(), fingerprint));
        Ok((client, to_auth(&credentials)))
    }

    /// Runs one registry call under the request timeout.
    async fn timed<T>(
        &self,
        r: &ImageReference,
        what: &str,
        blob: Option<&Digest>,
        call: impl std::future::Future<Output = std::result::Result<T, OciDistributionError>>,
    ) -> Result<T> {
        match tokio::time::timeout(self.settings.request_timeout, call).await {
            Ok(result) => result.map_err(|e| map_error(e, r, what, blob)),
            Err(_) => Err(self.timeout(r, what)),
        }
    }

    fn timeout(&self, r: &ImageReference, what: &str) -> ImageError {
        ImageError::Timeout {
            reference: r.to_string(),
            registry: r.registry().to_owned(),
            what: what.to_owned(),
            seconds: self.settings.request_timeout.as_secs(),
        }
    }

    /// Asks the registry which manifest digest a tag currently points at.
    pub async fn resolve_digest(&self, r: &ImageReference) -> Result<Digest> {
        let (client, auth) = self.client(r).await?;
        self.manifest_fetches.fetch_add(1, Ordering::Relaxed);
        let digest = self
            .timed(
                r,
                "manifest digest",
                None,
                client.fetch_manifest_digest(r.oci(), &auth),
            )
            .await?;
        Digest::parse(&digest).map_err(|_| ImageError::UnsupportedImage {
            reference: r.to_string(),
            reason: format!(
                "the registry names it by {digest}, but only sha256 digests are supported"
            ),
        })
    }

    /// Fetches the manifest `digest` and returns its bytes, verified.
    pub async fn fetch_manifest(&self, r: &ImageReference, digest: &Digest) -> Result<Vec<u8>> {
        let pinned = r.with_digest(digest);
        let (client, auth) = self.client(r).await?;
        self.manifest_fetches.fetch_add(1, Ordering::Relaxed);
        let (bytes, _) = self
            .timed(
                r,
                "manifest",
                Some(digest),
                client.pull_manifest_raw(pinned.oci(), &auth, MANIFEST_TYPES),
            )
            .await?;
        // oci-client already compares against the reference's digest; check
        // again here so the guarantee does not depend on its internals.
        if Digest::of(&bytes) != *digest {
            return Err(ImageError::Corrupt {
                reference: r.to_string(),
                digest: digest.clone(),
            });
        }
        Ok(bytes.to_vec())
    }

    /// Downloads `blob` into a new temporary file under `tmp_dir`, verifying
    /// its sha256 and size on the way. On any error the temporary file is
    /// removed, so nothing unverified ever stays on disk.
    pub async fn download_blob(
        &self,
        r: &ImageReference,
        blob: &BlobRef,
        tmp_dir: &Path,
    ) -> Result<tempfile::TempPath> {
        let what = "blob";
        let (client, auth) = self.client(r).await?;
        // Registers the credentials for this registry in the client; the
        // blob call itself takes none.
        client
            .store_auth_if_needed(r.oci().resolve_registry(), &auth)
            .await;
        let descriptor = OciDescriptor {
            media_type: blob.media_type.clone(),
            digest: blob.digest.as_str().to_owned(),
            size: i64::try_from(blob.size).unwrap_or(i64::MAX),
            ..OciDescriptor::default()
        };
        let (file, path) = tempfile::NamedTempFile::new_in(tmp_dir)
            .map_err(ImageError::io(
                "could not create a temporary file in",
                tmp_dir,
            ))?
            .into_parts();
        let mut file = tokio::fs::File::from_std(file);
        self.blob_downloads.fetch_add(1, Ordering::Relaxed);
        let mut stream = self
            .timed(
                r,
                what,
                Some(&blob.digest),
                client.pull_blob_stream(r.oci(), &descriptor),
            )
            .await?;
        let corrupt = || ImageError::Corrupt {
            reference: r.to_string(),
            digest: blob.digest.clone(),
        };
        let mut hasher = Sha256::new();
        let mut received: u64 = 0;
        loop {
            // Each read is timed separately: a large layer may legitimately
            // take long in total, but a silent connection must not hang.
            let next = tokio::time::timeout(self.settings.request_timeout, stream.next())
                .await
                .map_err(|_| self.timeout(r, what))?;
            let chunk = match next {
                None => break,
                Some(Ok(chunk)) => chunk,
                Some(Err(e)) if is_digest_error(&e) => return Err(corrupt()),
                Some(Err(e)) => {
                    return Err(map_error(
                        OciDistributionError::IoError(e),
                        r,
                        what,
                        Some(&blob.digest),
                    ));
                }
            };
            received += chunk.len() as u64;
            // More bytes than the manifest announced cannot be the blob:
            // stop early instead of filling the disk.
            if blob.size > 0 && received > blob.size {
                return Err(corrupt());
            }
            hasher.update(&chunk);
            file.write_all(&chunk)
                .await
                .map_err(ImageError::io("could not write", path.to_path_buf()))?;
        }
        if Digest::from_hasher(hasher) != blob.digest {
            return Err(corrupt());
        }
        // Flushed to disk before the caller renames it into the cache, so a
        // crash cannot leave a blob there whose content is not its digest.
        file.sync_all()
            .await
            .map_err(ImageError::io("could not flush", path.to_path_buf()))?;
        Ok(path)
    }
}

fn is_digest_error(e: &std::io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.downcast_ref::<DigestError>().is_some())
}

fn to_auth(credentials: &RegistryCredentials) -> RegistryAuth {
    match credentials {
        RegistryCredentials::Anonymous => RegistryAuth::Anonymous,
        RegistryCredentials::Basic { username, password } => {
            RegistryAuth::Basic(username.clone(), password.clone())
        }
        RegistryCredentials::Bearer { token } => RegistryAuth::Bearer(token.clone()),
    }
}

/// Tells credentials apart without keeping a second copy of them.
fn fingerprint(credentials: &RegistryCredentials) -> [u8; 32] {
    let mut hasher = Sha256::new();
    match credentials {
        RegistryCredentials::Anonymous => hasher.update(b"anonymous"),
        RegistryCredentials::Basic { username, password } => {
            hasher.update(b"basic\0");
            hasher.update(username.as_bytes());
            hasher.update(b"\0");
            hasher.update(password.as_bytes());
        }
        RegistryCredentials::Bearer { token } => {
            hasher.update(b"bearer\0");
            hasher.update(token.as_bytes());
        }
    }
    hasher.finalize().into()
}

/// Turns an oci-client error into one of ours, classifying "not found",
/// "unauthorized" and "corrupt" so callers can react to them.
fn map_error(
    e: OciDistributionError,
    r: &ImageReference,
    what: &str,
    blob: Option<&Digest>,
) -> ImageError {
    let reference = r.to_string();
    let registry = r.registry().to_owned();
    let not_found = || ImageError::NotFound {
        reference: reference.clone(),
        registry: registry.clone(),
    };
    let unauthorized = || ImageError::Unauthorized {
        reference: reference.clone(),
        registry: registry.clone(),
    };
    match &e {
        OciDistributionError::DigestError(DigestError::VerificationError { .. }) => {
            if let Some(digest) = blob.or(r.digest()) {
                return ImageError::Corrupt {
                    reference,
                    digest: digest.clone(),
                };
            }
        }
        OciDistributionError::IoError(io) if is_digest_error(io) => {
            if let Some(digest) = blob.or(r.digest()) {
                return ImageError::Corrupt {
                    reference,
                    digest: digest.clone(),
                };
            }
        }
        OciDistributionError::RegistryError { envelope, .. } => {
            let codes: Vec<&OciErrorCode> = envelope.errors.iter().map(|e| &e.code).collect();
            if codes.iter().any(|c| {
                matches!(
                    c,
                    OciErrorCode::ManifestUnknown
                        | OciErrorCode::NameUnknown
                        | OciErrorCode::BlobUnknown
                        | OciErrorCode::NotFound
                )
            }) {
                return not_found();
            }
            if codes
                .iter()
                .any(|c| matches!(c, OciErrorCode::Unauthorized | OciErrorCode::Denied))
            {
                return unauthorized();
            }
        }
        OciDistributionError::ServerError { code: 404, .. } => return not_found(),
        OciDistributionError::ServerError {
            code: 401 | 403, ..
        }
        | OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => return unauthorized(),
        _ => {}
    }
    ImageError::Registry {
        reference,
        registry,
        what: what.to_owned(),
        message: e.to_string(),
    }
}
