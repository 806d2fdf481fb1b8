//! Test images: built with umoci, pushed with skopeo to the registry that
//! `scripts/test-servers.sh` starts.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use levers9_image::{ContainerId, ImageStore, ImageStoreConfig};

/// `host:port` of the test registry.
pub fn registry() -> String {
    std::env::var("LEVERS9_TEST_REGISTRY").unwrap_or_else(|_| {
        panic!(
            "LEVERS9_TEST_REGISTRY is not set: run these tests through the test servers, \
             e.g. `scripts/test-servers.sh cargo test -p levers9-image`"
        )
    })
}

/// The test registry's storage root.
pub fn registry_dir() -> PathBuf {
    std::env::var("LEVERS9_TEST_REGISTRY_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            panic!(
                "LEVERS9_TEST_REGISTRY_DIR is not set: run these tests through the test servers, \
             e.g. `scripts/test-servers.sh cargo test -p levers9-image`"
            )
        })
}

/// A fresh store on a temporary root.
pub fn store(max_cache_bytes: u64) -> (tempfile::TempDir, ImageStore) {
    let root = tempfile::Builder::new()
        .prefix("levers9-image-test-")
        .tempdir()
        .unwrap();
    let mut config = ImageStoreConfig::new(root.path());
    config.max_cache_bytes = max_cache_bytes;
    let store = ImageStore::open(config).unwrap();
    (root, store)
}

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An image pushed to the test registry.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// `registry/repo:tag`
    pub tag_ref: String,
    /// `registry/repo@sha256:…`
    pub digest_ref: String,
    /// `sha256:…` of the manifest as pushed (what `digest_ref` names).
    pub digest: String,
    /// The layer blob digests, bottom first.
    pub layers: Vec<String>,
}

/// Builds an OCI image layer by layer with umoci.
pub struct ImageBuilder {
    dir: tempfile::TempDir,
    image: String,
    bundle: PathBuf,
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

impl ImageBuilder {
    /// An empty image whose bundle is unpacked and ready for files.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("levers9-oci-")
            .tempdir()
            .unwrap();
        let layout = dir.path().join("oci");
        let image = format!("{}:t", layout.display());
        let bundle = dir.path().join("bundle");
        run(Command::new("umoci")
            .arg("init")
            .arg("--layout")
            .arg(&layout));
        run(Command::new("umoci").args(["new", "--image", &image]));
        run(Command::new("umoci")
            .args(["unpack", "--image", &image])
            .arg(&bundle));
        ImageBuilder { dir, image, bundle }
    }

    /// The rootfs being edited.
    pub fn rootfs(&self) -> PathBuf {
        self.bundle.join("rootfs")
    }

    /// Writes a file (creating its directories) in the rootfs.
    pub fn write(&self, path: &str, contents: &str) -> &Self {
        let p = self.rootfs().join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, contents).unwrap();
        self
    }

    /// Removes a file or directory from the rootfs.
    pub fn remove(&self, path: &str) -> &Self {
        let p = self.rootfs().join(path);
        if p.is_dir() {
            fs::remove_dir_all(p).unwrap();
        } else {
            fs::remove_file(p).unwrap();
        }
        self
    }

    /// Adds the static busybox and a few applet links, plus a file unique
    /// to this image so that its layer digest is unique too (tests tamper
    /// with blobs, which the registry shares between repositories).
    pub fn busybox(&self) -> &Self {
        let bin = self.rootfs().join("bin");
        fs::create_dir_all(&bin).unwrap();
        fs::copy("/bin/busybox", bin.join("busybox")).unwrap();
        for applet in ["sh", "cat", "ls", "echo", "touch"] {
            std::os::unix::fs::symlink("busybox", bin.join(applet)).unwrap();
        }
        for d in ["proc", "sys", "dev", "tmp", "etc"] {
            fs::create_dir_all(self.rootfs().join(d)).unwrap();
        }
        self.write("etc/image-id", &unique("image"));
        self
    }

    /// Commits the changes since the last layer as a new layer.
    pub fn layer(&self) -> &Self {
        run(Command::new("umoci")
            .args(["repack", "--refresh-bundle", "--image", &self.image])
            .arg(&self.bundle));
        self
    }

    /// Appends a hand-made layer: `(path, Some(contents))` files and
    /// `(path, None)` directories. Call after the last [`Self::layer`].
    pub fn raw_layer(&self, entries: &[(&str, Option<&str>)]) -> &Self {
        let mut b = tar::Builder::new(Vec::new());
        for (path, contents) in entries {
            let mut h = tar::Header::new_ustar();
            match contents {
                Some(c) => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_mode(0o644);
                    h.set_size(c.len() as u64);
                }
                None => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_mode(0o755);
                    h.set_size(0);
                }
            }
            h.set_mtime(1_700_000_000);
            h.set_uid(0);
            h.set_gid(0);
            b.append_data(&mut h, path, contents.unwrap_or("").as_bytes())
                .unwrap();
        }
        let tar_path = self.dir.path().join(format!("raw-{}.tar", unique("layer")));
        fs::write(&tar_path, b.into_inner().unwrap()).unwrap();
        run(Command::new("umoci")
            .args(["raw", "add-layer", "--image", &self.image])
            .arg(&tar_path));
        self
    }

    /// Sets config fields, e.g. `["--config.cmd=/bin/sh"]`.
    pub fn config(&self, args: &[&str]) -> &Self {
        run(Command::new("umoci")
            .args(["config", "--image", &self.image])
            .args(args));
        self
    }

    /// Pushes the image as `levers9-test/<name>-<unique>:v1`.
    pub fn push(&self, name: &str) -> Pushed {
        let layout = self.dir.path().join("oci");
        run(Command::new("umoci").arg("gc").arg("--layout").arg(&layout));
        let repo = format!("{}/levers9-test/{}", registry(), unique(name));
        let tag_ref = format!("{repo}:v1");
        let digest_file = self.dir.path().join("digest");
        run(Command::new("skopeo")
            .args(["copy", "--quiet", "--dest-tls-verify=false", "--digestfile"])
            .arg(&digest_file)
            .arg(format!("oci:{}", self.image))
            .arg(format!("docker://{tag_ref}")));
        let digest = fs::read_to_string(&digest_file).unwrap().trim().to_owned();
        let manifest = fs::read(
            layout
                .join("blobs/sha256")
                .join(digest.trim_start_matches("sha256:")),
        )
        .expect("skopeo kept the manifest digest of the local layout");
        let manifest: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
        let layers = manifest["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["digest"].as_str().unwrap().to_owned())
            .collect();
        Pushed {
            digest_ref: format!("{repo}@{digest}"),
            tag_ref,
            digest,
            layers,
        }
    }
}

/// A name unique in this test run.
/// A container id a test names.
pub fn id(id: &str) -> ContainerId {
    ContainerId::parse(id).unwrap()
}

pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A one-layer busybox image with `/etc/hello.txt` and a full config.
pub fn busybox_image(name: &str) -> Pushed {
    let b = ImageBuilder::new();
    b.busybox()
        .write("etc/hello.txt", "hello from the image\n")
        .layer();
    b.config(&[
        "--config.entrypoint=/bin/sh",
        "--config.cmd=-c",
        "--config.cmd=echo hello",
        "--config.env=PATH=/bin",
        "--config.env=GREETING=hi",
        "--config.workingdir=/tmp",
        "--config.user=1000:1000",
    ]);
    b.push(name)
}

/// Whether `path` appears as a mount point in /proc/self/mountinfo.
pub fn in_mountinfo(path: &Path) -> bool {
    levers9_image::is_mounted(path)
}
