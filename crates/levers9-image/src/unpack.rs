//! Unpacking one layer blob into a directory that overlayfs can use as a
//! lower layer.
//!
//! * Compression is detected from the first bytes (gzip, zstd, or none), not
//!   trusted from the media type.
//! * The uncompressed stream is hashed and must match the layer's `diff_id`.
//! * Paths are confined to the layer directory: absolute paths and `..` are
//!   rejected, and no entry (nor a hard link's target) may be reached through
//!   a symlink, so a layer cannot write or link anything outside its
//!   directory. Symlinks themselves may point anywhere: they are only ever
//!   resolved inside the container, never by us.
//! * OCI whiteouts become overlayfs whiteouts: `.wh.NAME` becomes a character
//!   device 0/0 named `NAME`, and `.wh..wh..opq` sets the
//!   `trusted.overlay.opaque=y` xattr on its directory. Other `.wh..wh.*`
//!   entries (AUFS metadata) are dropped.
//! * Device nodes are not created (the runtime provides `/dev`; an image must
//!   not be able to plant e.g. a block device of the host disk); `trusted.*`
//!   xattrs from the archive are dropped so an image cannot forge overlay
//!   metadata.

use std::ffi::{CString, OsStr};
use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use nix::sys::stat::{mknod, Mode, SFlag};
use sha2::{Digest as _, Sha256};
use tar::EntryType;

use crate::reference::Digest;

const WHITEOUT_PREFIX: &str = ".wh.";
const OPAQUE_MARKER: &str = ".wh..wh..opq";
const OPAQUE_XATTR: &str = "trusted.overlay.opaque";

/// Why a layer could not be unpacked.
#[derive(Debug)]
pub enum UnpackError {
    /// The archive is malformed or unsafe.
    Invalid(String),
    /// A local file-system operation failed.
    Io {
        /// What was being done, e.g. "could not create directory".
        action: &'static str,
        /// What it was done to.
        path: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> UnpackError {
    let path = path.to_path_buf();
    move |source| UnpackError::Io {
        action,
        path,
        source,
    }
}

/// Hashes everything read through it.
struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// Unpacks the layer blob at `blob` into the existing empty directory
/// `dest`, checking the uncompressed content against `diff_id`. Returns the
/// disk space used by `dest` in bytes.
pub fn unpack_layer(blob: &Path, dest: &Path, diff_id: &Digest) -> Result<u64, UnpackError> {
    let mut file = fs::File::open(blob).map_err(io_err("could not open", blob))?;
    let mut magic = [0u8; 4];
    let n = read_up_to(&mut file, &mut magic).map_err(io_err("could not read", blob))?;
    file.seek(SeekFrom::Start(0))
        .map_err(io_err("could not read", blob))?;
    let reader: Box<dyn Read> = match &magic[..n] {
        [0x1f, 0x8b, ..] => Box::new(flate2::read::MultiGzDecoder::new(io::BufReader::new(file))),
        [0x28, 0xb5, 0x2f, 0xfd] => Box::new(
            zstd::stream::read::Decoder::new(file)
                .map_err(|e| UnpackError::Invalid(format!("bad zstd stream: {e}")))?,
        ),
        _ => Box::new(io::BufReader::new(file)),
    };
    let mut archive = tar::Archive::new(HashingReader {
        inner: reader,
        hasher: Sha256::new(),
    });
    // Ownership can only be set by root; a non-root cache (tests of the
    // unpacker alone) keeps its own uid.
    archive.set_preserve_ownerships(nix::unistd::geteuid().is_root());
    archive.set_preserve_permissions(true);
    archive.set_preserve_mtime(true);
    archive.set_unpack_xattrs(false);
    archive.set_overwrite(true);

    let bad = |e: io::Error| UnpackError::Invalid(format!("the tar stream is malformed: {e}"));
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        unpack_entry(&mut entry, dest)?;
    }
    // The tar reader stops at the end-of-archive marker; hash the rest too
    // (padding) so the digest covers the whole stream like diff_id does.
    let mut rest = archive.into_inner();
    io::copy(&mut rest, &mut io::sink()).map_err(bad)?;
    let actual = Digest::from_hasher(rest.hasher);
    if actual != *diff_id {
        return Err(UnpackError::Invalid(format!(
            "its uncompressed content is {actual}, not the diff_id {diff_id} listed in the image config"
        )));
    }
    disk_usage(dest)
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn unpack_entry<R: Read>(entry: &mut tar::Entry<'_, R>, dest: &Path) -> Result<(), UnpackError> {
    let raw = entry
        .path()
        .map_err(|e| UnpackError::Invalid(format!("an entry has an unreadable path: {e}")))?
        .into_owned();
    let Some(rel) = confine(&raw)? else {
        // The layer root itself ("./"): its attributes come from the upper dir.
        return Ok(());
    };
    let name = rel.file_name().unwrap_or_default().as_bytes();
    let kind = entry.header().entry_type();

    if let Some(hidden) = name.strip_prefix(WHITEOUT_PREFIX.as_bytes()) {
        let parent = rel.parent().unwrap_or(Path::new(""));
        make_dirs(dest, parent, &rel)?;
        let dir = dest.join(parent);
        if name == OPAQUE_MARKER.as_bytes() {
            return set_xattr(&dir, OPAQUE_XATTR, b"y");
        }
        if hidden.starts_with(WHITEOUT_PREFIX.as_bytes())
            || hidden.is_empty()
            || hidden == b"."
            || hidden == b".."
        {
            return Ok(());
        }
        let target = dir.join(OsStr::from_bytes(hidden));
        remove_existing(&target, false)?;
        return mknod(&target, SFlag::S_IFCHR, Mode::empty(), 0)
            .map_err(|e| io_err("could not create the whiteout", &target)(e.into()));
    }

    make_dirs(dest, rel.parent().unwrap_or(Path::new("")), &rel)?;
    let target = dest.join(&rel);
    let xattrs = pax_xattrs(entry);
    match kind {
        EntryType::Directory => remove_existing(&target, true)?,
        EntryType::Regular | EntryType::Continuous | EntryType::GNUSparse | EntryType::Symlink => {
            remove_existing(&target, false)?
        }
        EntryType::Link => {
            let link = entry
                .link_name()
                .map_err(|e| {
                    UnpackError::Invalid(format!(
                        "hard link {} has a bad target: {e}",
                        raw.display()
                    ))
                })?
                .ok_or_else(|| {
                    UnpackError::Invalid(format!("hard link {} has no target", raw.display()))
                })?;
            let link_rel = confine(&link)?.ok_or_else(|| {
                UnpackError::Invalid(format!(
                    "hard link {} points at the layer root",
                    raw.display()
                ))
            })?;
            check_no_symlinks(dest, link_rel.parent().unwrap_or(Path::new("")), &link_rel)?;
            let source = dest.join(&link_rel);
            match fs::symlink_metadata(&source) {
                Ok(m) if !m.is_dir() => {}
                _ => {
                    return Err(UnpackError::Invalid(format!(
                        "hard link {} points at {}, which is not an earlier file of this layer",
                        raw.display(),
                        link.display()
                    )))
                }
            }
            remove_existing(&target, false)?;
            // linkat without AT_SYMLINK_FOLLOW: a link to a symlink links the
            // symlink itself, never what it points to.
            return fs::hard_link(&source, &target)
                .map_err(io_err("could not create the hard link", &target));
        }
        EntryType::Fifo => {
            remove_existing(&target, false)?;
            let mode = Mode::from_bits_truncate(entry.header().mode().unwrap_or(0o644));
            return nix::unistd::mkfifo(&target, mode)
                .map_err(|e| io_err("could not create the fifo", &target)(e.into()));
        }
        EntryType::Char | EntryType::Block => {
            tracing::debug!(path = %raw.display(), "skipping a device node in a layer");
            return Ok(());
        }
        EntryType::XGlobalHeader
        | EntryType::XHeader
        | EntryType::GNULongName
        | EntryType::GNULongLink => return Ok(()),
        other => {
            return Err(UnpackError::Invalid(format!(
                "entry {} has the unsupported type {other:?}",
                raw.display()
            )))
        }
    }
    entry
        .unpack(&target)
        .map_err(|e| UnpackError::Invalid(format!("could not unpack {}: {e}", raw.display())))?;
    for (name, value) in xattrs {
        set_xattr(&target, &name, &value)?;
    }
    Ok(())
}

/// The path relative to the layer root, or an error if it is absolute or
/// climbs with `..`. `None` for the root itself.
pub(crate) fn confine(raw: &Path) -> Result<Option<PathBuf>, UnpackError> {
    let mut out = PathBuf::new();
    for c in raw.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(UnpackError::Invalid(format!(
                    "entry {} contains \"..\" and would escape the layer",
                    raw.display()
                )))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(UnpackError::Invalid(format!(
                    "entry {} is an absolute path and would escape the layer",
                    raw.display()
                )))
            }
        }
    }
    Ok((!out.as_os_str().is_empty()).then_some(out))
}

/// Creates the directories of `dir` (relative to `root`) that are missing.
/// A symlink on the way is an escape attempt; a file on the way is replaced
/// by a directory (the later entry wins, as in tar).
fn make_dirs(root: &Path, dir: &Path, entry: &Path) -> Result<(), UnpackError> {
    let mut cur = root.to_path_buf();
    for c in dir.components() {
        cur.push(c);
        match fs::symlink_metadata(&cur) {
            Ok(m) if m.is_dir() => continue,
            Ok(m) if m.file_type().is_symlink() => return Err(through_symlink(entry, root, &cur)),
            Ok(_) => fs::remove_file(&cur).map_err(io_err("could not replace", &cur))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("could not inspect", &cur)(e)),
        }
        fs::create_dir(&cur).map_err(io_err("could not create directory", &cur))?;
    }
    Ok(())
}

/// Fails if any directory of `dir` (relative to `root`) is a symlink.
fn check_no_symlinks(root: &Path, dir: &Path, entry: &Path) -> Result<(), UnpackError> {
    let mut cur = root.to_path_buf();
    for c in dir.components() {
        cur.push(c);
        if fs::symlink_metadata(&cur).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(through_symlink(entry, root, &cur));
        }
    }
    Ok(())
}

fn through_symlink(entry: &Path, root: &Path, link: &Path) -> UnpackError {
    UnpackError::Invalid(format!(
        "entry {} would be reached through the symlink {} and could escape the layer",
        entry.display(),
        link.strip_prefix(root).unwrap_or(link).display()
    ))
}

/// Removes what is at `path` before an entry replaces it, without ever
/// following a symlink. A directory is kept when a directory replaces it
/// (tar semantics: its attributes are updated, its contents stay).
fn remove_existing(path: &Path, keep_dir: bool) -> Result<(), UnpackError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() && keep_dir => Ok(()),
        Ok(m) if m.is_dir() => fs::remove_dir_all(path).map_err(io_err("could not replace", path)),
        Ok(_) => fs::remove_file(path).map_err(io_err("could not replace", path)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err("could not inspect", path)(e)),
    }
}

/// The extended attributes recorded for the entry (PAX `SCHILY.xattr.*`),
/// minus `trusted.*` (overlay metadata an image must not forge) and
/// `security.selinux` (host policy, not image content).
fn pax_xattrs<R: Read>(entry: &mut tar::Entry<'_, R>) -> Vec<(String, Vec<u8>)> {
    let Ok(Some(exts)) = entry.pax_extensions() else {
        return Vec::new();
    };
    exts.filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.key().ok()?.strip_prefix("SCHILY.xattr.")?;
            (!name.starts_with("trusted.") && name != "security.selinux")
                .then(|| (name.to_owned(), e.value_bytes().to_vec()))
        })
        .collect()
}

fn set_xattr(path: &Path, name: &str, value: &[u8]) -> Result<(), UnpackError> {
    let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        UnpackError::Invalid(format!("path {} contains a NUL byte", path.display()))
    })?;
    let c_name = CString::new(name)
        .map_err(|_| UnpackError::Invalid(format!("xattr name {name:?} contains a NUL byte")))?;
    // SAFETY: both strings are valid NUL-terminated C strings that outlive
    // the call, and value points at value.len() readable bytes.
    let rc = unsafe {
        libc::lsetxattr(
            c_path.as_ptr(),
            c_name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io_err("could not set an extended attribute on", path)(
            io::Error::last_os_error(),
        ))
    }
}

/// Disk space used under `dir` (allocated blocks, not apparent sizes).
pub(crate) fn disk_usage(dir: &Path) -> Result<u64, UnpackError> {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let meta = fs::symlink_metadata(&d).map_err(io_err("could not inspect", &d))?;
        total += meta.blocks() * 512;
        if meta.is_dir() {
            for child in fs::read_dir(&d).map_err(io_err("could not list", &d))? {
                stack.push(child.map_err(io_err("could not list", &d))?.path());
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
#[path = "unpack_tests.rs"]
mod tests;
