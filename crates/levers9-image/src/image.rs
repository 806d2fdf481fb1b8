//! A pulled image (manifest + config) and the parsing of their JSON.

use serde::{Deserialize, Serialize};

use crate::error::{ImageError, Result};
use crate::reference::{Digest, ImageReference};

/// An image whose manifest, config and layers are in the local cache.
///
/// It is plain data (serializable) so a runtime can keep it and call
/// [`crate::ImageStore::prepare_rootfs`] later, even after a restart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// The reference the image was asked for by, pinned to [`Image::digest`].
    pub reference: ImageReference,
    /// The digest of the image manifest: what identifies the image.
    pub digest: Digest,
    /// The digest of the image config blob.
    pub config_digest: Digest,
    /// The layers, bottom (base) first, as in the manifest.
    pub layers: Vec<Layer>,
    /// The parts of the image config the runtime needs.
    pub config: ImageConfig,
}

/// One layer of an image.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layer {
    /// The digest of the layer blob as stored in the registry (compressed).
    pub digest: Digest,
    /// The digest of the uncompressed tar (`rootfs.diff_ids` in the config);
    /// checked while unpacking.
    pub diff_id: Digest,
    /// The blob's size in bytes, per the manifest.
    pub size: u64,
    /// The blob's media type.
    pub media_type: String,
}

/// How to run the image, from the `config` section of the image config.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageConfig {
    /// `Entrypoint`.
    pub entrypoint: Vec<String>,
    /// `Cmd` (arguments to the entrypoint, or the command if there is none).
    pub cmd: Vec<String>,
    /// `Env`, as `NAME=value` strings.
    pub env: Vec<String>,
    /// `WorkingDir`, if set.
    pub working_dir: Option<String>,
    /// `User` (`uid`, `uid:gid`, or names), if set.
    pub user: Option<String>,
}

impl ImageConfig {
    /// The default command line: entrypoint followed by cmd.
    pub fn argv(&self) -> Vec<String> {
        self.entrypoint.iter().chain(&self.cmd).cloned().collect()
    }
}

/// A blob to fetch: digest, size limit and media type.
#[derive(Clone, Debug)]
pub(crate) struct BlobRef {
    pub digest: Digest,
    pub size: u64,
    pub media_type: String,
}

/// What a manifest blob turned out to be.
pub(crate) enum Manifest {
    /// An image manifest: config and layers.
    Image {
        config: BlobRef,
        layers: Vec<BlobRef>,
    },
    /// An index: the digest of the entry for this machine's platform.
    Index { platform_manifest: Digest },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawManifest {
    media_type: Option<String>,
    config: Option<RawDescriptor>,
    layers: Option<Vec<RawDescriptor>>,
    manifests: Option<Vec<RawIndexEntry>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawDescriptor {
    #[serde(default)]
    media_type: String,
    digest: String,
    #[serde(default)]
    size: i64,
}

#[derive(Deserialize)]
struct RawIndexEntry {
    digest: String,
    platform: Option<RawPlatform>,
}

#[derive(Deserialize)]
struct RawPlatform {
    architecture: String,
    os: String,
}

#[derive(Deserialize)]
struct RawConfig {
    #[serde(default)]
    config: Option<RawRunConfig>,
    #[serde(default)]
    rootfs: Option<RawRootfs>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct RawRunConfig {
    entrypoint: Option<Vec<String>>,
    cmd: Option<Vec<String>>,
    env: Option<Vec<String>>,
    working_dir: Option<String>,
    user: Option<String>,
}

#[derive(Deserialize)]
struct RawRootfs {
    #[serde(default)]
    diff_ids: Vec<String>,
}

/// Layer media types this crate can unpack (compression is detected from
/// the data itself, so this only rules out non-filesystem artifacts).
fn is_layer_media_type(media_type: &str) -> bool {
    media_type.is_empty()
        || media_type.ends_with(".tar")
        || media_type.ends_with(".tar+gzip")
        || media_type.ends_with(".tar+zstd")
        || media_type.ends_with(".tar.gzip")
        || media_type.ends_with(".tar.zstd")
}

/// The OCI name of this machine's architecture.
fn oci_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

pub(crate) fn parse_manifest(reference: &ImageReference, bytes: &[u8]) -> Result<Manifest> {
    let unsupported = |reason: String| ImageError::UnsupportedImage {
        reference: reference.to_string(),
        reason,
    };
    let raw: RawManifest = serde_json::from_slice(bytes)
        .map_err(|e| unsupported(format!("its manifest is not valid JSON: {e}")))?;
    if let Some(entries) = raw.manifests {
        let wanted = oci_arch();
        let entry = entries
            .iter()
            .find(|e| {
                e.platform
                    .as_ref()
                    .is_some_and(|p| p.os == "linux" && p.architecture == wanted)
            })
            .ok_or_else(|| unsupported(format!("its index has no linux/{wanted} image")))?;
        return Ok(Manifest::Index {
            platform_manifest: Digest::parse(&entry.digest)?,
        });
    }
    let (Some(config), Some(layers)) = (raw.config, raw.layers) else {
        return Err(unsupported(format!(
            "its manifest (media type {}) is neither an image manifest nor an index",
            raw.media_type.as_deref().unwrap_or("unset")
        )));
    };
    let blob = |d: RawDescriptor| -> Result<BlobRef> {
        Ok(BlobRef {
            digest: Digest::parse(&d.digest)?,
            size: u64::try_from(d.size).unwrap_or(0),
            media_type: d.media_type,
        })
    };
    let layers = layers.into_iter().map(blob).collect::<Result<Vec<_>>>()?;
    if let Some(bad) = layers.iter().find(|l| !is_layer_media_type(&l.media_type)) {
        return Err(unsupported(format!(
            "layer {} has media type {}, which is not a file-system layer",
            bad.digest, bad.media_type
        )));
    }
    Ok(Manifest::Image {
        config: blob(config)?,
        layers,
    })
}

/// Builds the [`Image`] from its manifest parts and config blob.
pub(crate) fn build_image(
    reference: &ImageReference,
    digest: Digest,
    config_ref: &BlobRef,
    layers: &[BlobRef],
    config_bytes: &[u8],
) -> Result<Image> {
    let unsupported = |reason: String| ImageError::UnsupportedImage {
        reference: reference.to_string(),
        reason,
    };
    let raw: RawConfig = serde_json::from_slice(config_bytes)
        .map_err(|e| unsupported(format!("its config is not valid JSON: {e}")))?;
    let diff_ids = raw.rootfs.map(|r| r.diff_ids).unwrap_or_default();
    if diff_ids.len() != layers.len() {
        return Err(unsupported(format!(
            "its config lists {} layer diff_ids but its manifest has {} layers",
            diff_ids.len(),
            layers.len()
        )));
    }
    let layers = layers
        .iter()
        .zip(&diff_ids)
        .map(|(l, diff_id)| {
            Ok(Layer {
                digest: l.digest.clone(),
                diff_id: Digest::parse(diff_id)?,
                size: l.size,
                media_type: l.media_type.clone(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let run = raw.config.unwrap_or_default();
    let non_empty = |s: Option<String>| s.filter(|s| !s.is_empty());
    Ok(Image {
        reference: reference.with_digest(&digest),
        digest,
        config_digest: config_ref.digest.clone(),
        layers,
        config: ImageConfig {
            entrypoint: run.entrypoint.unwrap_or_default(),
            cmd: run.cmd.unwrap_or_default(),
            env: run.env.unwrap_or_default(),
            working_dir: non_empty(run.working_dir),
            user: non_empty(run.user),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(c: char) -> String {
        format!("sha256:{}", c.to_string().repeat(64))
    }

    #[test]
    fn parses_manifest_and_config() {
        let r = ImageReference::parse("127.0.0.1:5000/a/b:v1").unwrap();
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",
            "config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{}","size":10}},
            "layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"{}","size":20}}]}}"#,
            d('c'),
            d('a')
        );
        let Manifest::Image { config, layers } = parse_manifest(&r, manifest.as_bytes()).unwrap()
        else {
            panic!("expected an image manifest");
        };
        let cfg = format!(
            r#"{{"config":{{"Entrypoint":["/bin/sh"],"Cmd":["-c","echo"],"Env":["PATH=/bin"],"WorkingDir":"/w","User":""}},
            "rootfs":{{"type":"layers","diff_ids":["{}"]}}}}"#,
            d('b')
        );
        let img = build_image(
            &r,
            Digest::parse(&d('e')).unwrap(),
            &config,
            &layers,
            cfg.as_bytes(),
        )
        .unwrap();
        assert_eq!(img.config.argv(), ["/bin/sh", "-c", "echo"]);
        assert_eq!(img.config.working_dir.as_deref(), Some("/w"));
        assert_eq!(img.config.user, None);
        assert_eq!(img.layers[0].diff_id.as_str(), d('b'));
        assert_eq!(
            img.reference.to_string(),
            format!("127.0.0.1:5000/a/b@{}", d('e'))
        );
    }

    #[test]
    fn index_selects_this_platform() {
        let r = ImageReference::parse("127.0.0.1:5000/a/b:v1").unwrap();
        let index = format!(
            r#"{{"schemaVersion":2,"manifests":[
            {{"digest":"{}","mediaType":"m","size":1,"platform":{{"architecture":"s390x","os":"linux"}}}},
            {{"digest":"{}","mediaType":"m","size":1,"platform":{{"architecture":"{}","os":"linux"}}}}]}}"#,
            d('1'),
            d('2'),
            oci_arch()
        );
        match parse_manifest(&r, index.as_bytes()).unwrap() {
            Manifest::Index { platform_manifest } => assert_eq!(platform_manifest.as_str(), d('2')),
            Manifest::Image { .. } => panic!("expected an index"),
        }
    }
}
