//! Python modules compiled for an image's own interpreter, so that function
//! containers load the SDK from `.pyc` files instead of compiling it from
//! source at every start (tens of milliseconds of a cold call's CPU).
//!
//! The SDK object is mounted read-only, so Python cannot keep what it
//! compiles there; and the caller cannot send compiled modules: its Python
//! need not be the image's, and the object's digest must not depend on it.
//! So the worker compiles an object marked `compile` once per (object,
//! image), in a container of that image that runs nothing but
//! `python3 -I -m compileall` over a copy of the object: no code of the
//! request, none of its environment, no network, the pool's profile
//! tightened by the hardened one. What it writes is used only by containers
//! of the same image, which run that same interpreter anyway; so a copy is
//! shared by every workspace whose containers have that object and image,
//! as the plain object is.
//!
//! The first container of a pair starts on the plain object while the copy
//! is compiled beside it; the containers after it get the copy. A compile
//! that fails (an image without `python3`) is not tried again until the
//! worker restarts, and its containers keep the plain object.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use levers9_api::v1::RunContainer;
use levers9_ids::{ContainerId, InvalidContainerId};
use levers9_image::Image;
use levers9_runtime::{BindMount, ContainerSpec, Exit, Resources, SecurityProfile};
use levers9_sync::Lock;

use super::Supervisor;

/// A compile that takes longer is stopped and counted as failed.
const COMPILE_TIMEOUT: Duration = Duration::from_secs(60);
/// What the compile container may use: compileall runs in one process.
const COMPILE_MILLICORES: u64 = 1000;
const COMPILE_MEMORY_MIB: u64 = 256;

/// Where each (object, image) pair stands, by [`pair_key`].
#[derive(Default)]
pub(super) struct Compiled {
    pairs: Lock<HashMap<String, Pair>>,
}

#[derive(Clone)]
enum Pair {
    Compiling,
    Ready(PathBuf),
    Failed,
}

/// `object`'s hex digest (its unpacked directory's name) and the image's.
fn pair_key(object_dir: &Path, image: &Image) -> Option<String> {
    let object = object_dir.file_name()?.to_str()?;
    Some(format!("{object}-{}", image.digest.hex()))
}

/// The compile container's id for the pair `key`: runtime ids are at most
/// 64 characters, so a part of each digest, enough that two pairs compiled
/// at once (one SDK, two images) never share one. The key is made of hex
/// digests, so the id is valid; the check stays, as for any id made here.
pub(super) fn compile_id(key: &str) -> Result<ContainerId, InvalidContainerId> {
    let (object, image) = key.split_once('-').unwrap_or((key, ""));
    ContainerId::parse(format!("pyc-{object:.28}-{image:.28}"))
}

impl Supervisor {
    fn compiled_root(&self) -> PathBuf {
        self.state_dir.join("compiled")
    }

    /// Points each of `mounts` whose object `request` marks `compile` at
    /// its copy compiled for `image`, where one is ready, and starts
    /// compiling the copies that are not, for the containers after this
    /// one. `mounts` are `request.objects`' mounts, in their order.
    pub(super) fn use_compiled(
        &self,
        mounts: &mut [BindMount],
        request: &RunContainer,
        image: &Image,
    ) {
        for (mount, object) in mounts.iter_mut().zip(&request.objects) {
            if !object.compile || !object.unpack {
                continue;
            }
            let Some(key) = pair_key(&mount.source, image) else {
                continue;
            };
            let ready = self.compiled_root().join(&key);
            let pair = {
                let mut pairs = self.compiled.pairs.lock();
                let known = pairs.get(&key).cloned();
                match known {
                    Some(pair) => pair,
                    // Compiled in an earlier life of this worker: the rename
                    // into place is the compile's last step.
                    None if ready.is_dir() => {
                        pairs.insert(key.clone(), Pair::Ready(ready.clone()));
                        Pair::Ready(ready)
                    }
                    None => {
                        pairs.insert(key.clone(), Pair::Compiling);
                        let this = self.clone();
                        let (plain, target, image) = (
                            mount.source.clone(),
                            mount.destination.clone(),
                            image.clone(),
                        );
                        tokio::spawn(async move {
                            this.compile(key, plain, target, image).await;
                        });
                        Pair::Compiling
                    }
                }
            };
            if let Pair::Ready(dir) = pair {
                mount.source = dir;
            }
        }
    }

    /// Compiles a copy of the unpacked object `plain` (mounted at `target`)
    /// for `image` and records how it went under `key`.
    async fn compile(&self, key: String, plain: PathBuf, target: String, image: Image) {
        let staging = self.compiled_root().join("tmp").join(&key);
        let ready = self.compiled_root().join(&key);
        let outcome = self
            .compile_into(&key, &plain, &staging, &target, &image)
            .await;
        let outcome = match outcome {
            Ok(()) => {
                let (from, to) = (staging.clone(), ready.clone());
                blocking(move || std::fs::rename(&from, &to)).await
            }
            Err(reason) => Err(reason),
        };
        let pair = match outcome {
            Ok(()) => {
                tracing::debug!(%key, "an object compiled for its image's python3");
                Pair::Ready(ready)
            }
            Err(reason) => {
                tracing::warn!(%key, image = %image.reference, %reason, "cannot compile an object's Python modules for its image; its containers load them from source");
                let _ = blocking(move || std::fs::remove_dir_all(&staging)).await;
                Pair::Failed
            }
        };
        self.compiled.pairs.lock().insert(key, pair);
    }

    async fn compile_into(
        &self,
        key: &str,
        plain: &Path,
        staging: &Path,
        target: &str,
        image: &Image,
    ) -> Result<(), String> {
        let (from, to) = (plain.to_owned(), staging.to_owned());
        blocking(move || writable_copy(&from, &to)).await?;
        let id = compile_id(key).map_err(|e| e.to_string())?;
        let rootfs = self
            .images
            .prepare_rootfs(image, &id)
            .await
            .map_err(|e| format!("cannot prepare the root filesystem: {e}"))?;
        let args = ["python3", "-I", "-m", "compileall", "-q"]
            .into_iter()
            .chain(["--invalidation-mode", "unchecked-hash", target])
            .map(str::to_owned)
            .collect();
        let mut spec = ContainerSpec::new(id.clone(), &rootfs.path, args);
        spec.env = super::image_env(image).collect();
        spec.mounts.push(BindMount {
            source: staging.to_owned(),
            destination: target.to_owned(),
            read_only: false,
        });
        spec.security = self
            .security()
            .profile
            .tightened_by(&SecurityProfile::hardened());
        spec.resources = Resources {
            cpu_millicores: COMPILE_MILLICORES,
            cpu_limit_millicores: COMPILE_MILLICORES,
            memory_mib: COMPILE_MEMORY_MIB,
            ..Resources::default()
        };
        let exit = self.run_compile(&spec).await;
        if let Err(error) = self.images.release(&id).await {
            tracing::warn!(container_id = %id, %error, "cannot release the root filesystem");
        }
        match exit? {
            Exit::Code(0) => {}
            other => return Err(format!("python3 -m compileall ended with {other:?}")),
        }
        let staged = staging.to_owned();
        blocking(move || seal(&staged)).await
    }

    async fn run_compile(&self, spec: &ContainerSpec) -> Result<Exit, String> {
        let container = self
            .runtime
            .start(spec)
            .await
            .map_err(|e| format!("cannot start the compile: {e}"))?;
        match tokio::time::timeout(COMPILE_TIMEOUT, container.wait()).await {
            Ok(exit) => exit.map_err(|e| format!("lost track of the compile: {e}")),
            Err(_) => {
                let _ = self.runtime.cleanup(&spec.id).await;
                Err(format!("the compile took over {COMPILE_TIMEOUT:?}"))
            }
        }
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// Copies the directory tree `from` to `to` (replacing a leftover), its
/// directories writable by whoever the container runs as: the copy sits
/// in the worker's own state directory, out of other users' reach.
fn writable_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    std::fs::create_dir_all(to)?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o777))?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, copy) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            writable_copy(&source, &copy)?;
        } else if kind.is_file() {
            std::fs::copy(&source, &copy)?;
        }
    }
    Ok(())
}

/// Makes the compiled copy read-only to all but the worker, and keeps only
/// plain files and directories: the compile ran the image's interpreter,
/// and nothing it left may point the worker, or a container, elsewhere.
fn seal(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        // symlink_metadata: a link is seen as itself, never followed.
        let kind = std::fs::symlink_metadata(&path)?.file_type();
        if kind.is_dir() {
            seal(&path)?;
        } else if kind.is_file() {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}
