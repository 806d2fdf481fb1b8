//! Overlay mounts: one per container, stacking the image's unpacked layers
//! (read-only, shared) under a private upper dir.
//!
//! Mounting uses `nix::mount::mount` (the `mount(2)` syscall) rather than
//! the `mount` command: no extra binary, no output parsing, and the errno
//! says exactly what failed.
//!
//! The kernel copies at most one page (4096 bytes on x86-64) of mount
//! options, and `lowerdir=` lists every layer. Absolute layer paths
//! (`<root>/layers/sha256/<64 hex>`) would allow only about 35 layers, and a
//! relative lowerdir needs `chdir`, which changes the working directory of
//! the whole multi-threaded process. So, like Docker's overlay2, each layer
//! gets a short symlink `<root>/l/<first 12 hex of its digest>` and the
//! lowerdir lists those (about `len(root) + 16` bytes per layer: ~90 layers
//! with a root like `/var/lib/levers9/images`). Should two digests ever
//! share 12 hex characters, the second uses its full path. Images that still
//! do not fit get [`ImageError::TooManyLayers`].

use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use levers9_ids::ContainerId;
use nix::errno::Errno;
use nix::mount::{umount2, MntFlags, MsFlags};
use serde::{Deserialize, Serialize};

use crate::cache::{link_target, Layout};
use crate::error::{ImageError, Result};
use crate::reference::Digest;

/// What is kept in `containers/<id>/record.json`, so that the layers of a
/// prepared rootfs stay pinned and `release` works after a restart.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ContainerRecord {
    pub image: Digest,
    pub layers: Vec<Digest>,
}

const RECORD: &str = "record.json";

/// The path to put in `lowerdir` for a layer: its short link, created if
/// needed.
fn lowerdir_for(layout: &Layout, d: &Digest) -> Result<PathBuf> {
    let link = layout.link(d);
    let target = link_target(d);
    match fs::read_link(&link) {
        Ok(t) if t == target => return Ok(link),
        // Another digest with the same 12-hex prefix owns the short name.
        Ok(_) => return Ok(layout.layer(d)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(ImageError::io("could not read the link", &link)(e)),
    }
    // Created under a temporary name and renamed, so a concurrent creator
    // cannot make us fail or see a half-made link. The name is this call's
    // own: containers of one image start side by side in one process.
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let tmp = layout.links_dir().join(format!(
        ".tmp-{}-{}-{}",
        d.hex(),
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_file(&tmp);
    symlink(&target, &tmp).map_err(ImageError::io("could not create the link", &tmp))?;
    fs::rename(&tmp, &link).map_err(ImageError::io("could not create the link", &link))?;
    Ok(link)
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

/// Creates `containers/<id>/{upper,work,merged}`, writes the record and
/// mounts the overlay. `layers` is bottom first (manifest order). On error
/// nothing of the container is left behind. The id is a directory name and
/// appears in the mount options: [`ContainerId`]'s alphabet is safe in both.
pub(crate) fn mount_rootfs(
    layout: &Layout,
    id: &ContainerId,
    reference: &str,
    record: &ContainerRecord,
) -> Result<PathBuf> {
    let dir = layout.container(id);
    match fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(ImageError::ContainerExists { id: id.to_string() })
        }
        Err(e) => return Err(ImageError::io("could not create directory", &dir)(e)),
    }
    let result = mount_in(layout, &dir, id, reference, record);
    if result.is_err() {
        let _ = fs::remove_dir_all(&dir);
    }
    result
}

fn mount_in(
    layout: &Layout,
    dir: &Path,
    id: &ContainerId,
    reference: &str,
    record: &ContainerRecord,
) -> Result<PathBuf> {
    let (upper, work, merged) = (dir.join("upper"), dir.join("work"), dir.join("merged"));
    for d in [&upper, &work, &merged] {
        fs::create_dir(d).map_err(ImageError::io("could not create directory", d))?;
    }
    let json = serde_json::to_vec(record).map_err(|e| ImageError::Io {
        action: "could not encode",
        path: dir.join(RECORD),
        source: io::Error::other(e),
    })?;
    let tmp = dir.join(".record.tmp");
    fs::write(&tmp, json).map_err(ImageError::io("could not write", &tmp))?;
    fs::rename(&tmp, dir.join(RECORD))
        .map_err(ImageError::io("could not write", dir.join(RECORD)))?;

    // overlayfs wants the topmost layer first.
    let mut lowers = Vec::with_capacity(record.layers.len());
    for d in record.layers.iter().rev() {
        lowers.push(lowerdir_for(layout, d)?);
    }
    if lowers.is_empty() {
        // An image without layers: overlay needs at least one lower dir.
        lowers.push(layout.empty_layer());
    }
    let lowerdir = lowers
        .iter()
        .map(|p| p.to_string_lossy())
        .collect::<Vec<_>>()
        .join(":");
    let options = format!(
        "lowerdir={lowerdir},upperdir={},workdir={}",
        upper.display(),
        work.display()
    );
    let limit = page_size() - 1;
    if options.len() > limit {
        return Err(ImageError::TooManyLayers {
            reference: reference.to_owned(),
            layers: record.layers.len(),
            length: options.len(),
            limit,
        });
    }
    nix::mount::mount(
        Some("overlay"),
        &merged,
        Some("overlay"),
        MsFlags::empty(),
        Some(options.as_str()),
    )
    .map_err(|e| ImageError::Mount {
        container_id: id.to_string(),
        path: merged.clone(),
        reason: format!("{e} (overlayfs must be available, and this must run as root)"),
    })?;
    Ok(merged)
}

/// Unmounts the rootfs of `id` (if mounted) and removes its directory.
pub(crate) fn unmount_rootfs(layout: &Layout, id: &ContainerId) -> Result<()> {
    unmount_dir(&layout.container(id), id.as_str())
}

/// Unmounts `dir/merged` (if mounted) and removes `dir`, the directory of
/// the container `id` (as its directory names it: [`read_records`] also
/// removes directories whose name is no valid id).
fn unmount_dir(dir: &Path, id: &str) -> Result<()> {
    let merged = dir.join("merged");
    if is_mounted(&merged) {
        match umount2(&merged, MntFlags::empty()) {
            Ok(()) => {}
            Err(Errno::EBUSY) => {
                // A process still uses it (the container was not stopped).
                // Detach it so the directory can go; the kernel frees the
                // mount when the last user is gone.
                tracing::warn!(
                    container = id,
                    "rootfs busy at release, detaching it lazily"
                );
                umount2(&merged, MntFlags::MNT_DETACH).map_err(|e| ImageError::Unmount {
                    container_id: id.to_owned(),
                    path: merged.clone(),
                    reason: e.to_string(),
                })?;
            }
            // Not a mount point (any more): nothing to undo.
            Err(Errno::EINVAL) => {}
            Err(e) => {
                return Err(ImageError::Unmount {
                    container_id: id.to_owned(),
                    path: merged,
                    reason: e.to_string(),
                })
            }
        }
    }
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(ImageError::io("could not remove", dir)(e))
        }
        _ => Ok(()),
    }
}

/// The records of the root file systems prepared before (by this or an
/// earlier process). Directories without a readable record are half-made
/// leftovers of a crash, and those not named by a valid id are not ours:
/// both are unmounted and removed.
pub(crate) fn read_records(layout: &Layout) -> Result<Vec<(ContainerId, ContainerRecord)>> {
    let dir = layout.containers();
    let mut out = Vec::new();
    for entry in fs::read_dir(&dir).map_err(ImageError::io("could not list", &dir))? {
        let entry = entry.map_err(ImageError::io("could not list", &dir))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let record = fs::read(entry.path().join(RECORD))
            .ok()
            .and_then(|b| serde_json::from_slice::<ContainerRecord>(&b).ok());
        match (ContainerId::parse(name.as_str()), record) {
            (Ok(id), Some(r)) => out.push((id, r)),
            _ => {
                tracing::warn!(container = %name, "removing an incomplete container directory");
                unmount_dir(&entry.path(), &name)?;
            }
        }
    }
    Ok(out)
}

/// Whether `path` is a mount point, per `/proc/self/mountinfo`.
pub fn is_mounted(path: &Path) -> bool {
    let Ok(info) = fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let wanted = path.to_string_lossy();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|mount_point| unescape_mountinfo(mount_point) == wanted)
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_mountinfo(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            out.push(
                (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0'),
            );
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Containers of one image start side by side: every caller gets the
    /// layer's short link, however their creations interleave.
    #[test]
    fn concurrent_callers_all_get_the_layer_link() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path().to_owned());
        fs::create_dir_all(layout.links_dir()).unwrap();
        let d = Digest::parse(&format!("sha256:{}", "ab".repeat(32))).unwrap();
        for _ in 0..50 {
            let _ = fs::remove_file(layout.link(&d));
            std::thread::scope(|s| {
                let callers: Vec<_> = (0..8)
                    .map(|_| s.spawn(|| lowerdir_for(&layout, &d)))
                    .collect();
                for caller in callers {
                    assert_eq!(caller.join().unwrap().unwrap(), layout.link(&d));
                }
            });
        }
    }

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape_mountinfo(r"/a\040b\134c"), r"/a b\c");
        assert_eq!(unescape_mountinfo(r"/plain\04"), r"/plain\04");
    }
}
