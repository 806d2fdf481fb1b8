//! Unpacking an image layer: its bytes come from any registry a user names.
//!
//! The layer is either the input's bytes as they are (the tar and gzip
//! readers on garbage), or an archive built from hostile entries: names
//! with `..`, absolute names, symlinks and hard links out of the layer,
//! files written through symlinks, whiteouts, forged overlay xattrs, long
//! GNU names, any entry type (raw bytes rarely get past tar's header
//! checksums, so those entries are built here).
//!
//! Beyond never panicking: whatever the layer, nothing outside the layer
//! directory changes (a victim directory and the blob beside it are
//! compared before and after, down to link counts and modes), no device
//! node but a 0/0 whiteout is made, and no `trusted.*` xattr but the
//! opaque marker's `y`.
//!
//! The target runs as root when it can (as the worker does, so ownership
//! and whiteouts are real). A link target never climbs further out of the
//! layer than the victim directory: were a check missing, the write would
//! land there, where it is seen, not in the fuzzing machine's own files.

#![no_main]

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use arbitrary::Arbitrary;
use levers9_image::fuzzing::unpack_layer;
use levers9_image::Digest;
use libfuzzer_sys::fuzz_target;
use tar::{EntryType, Header};

#[derive(Arbitrary, Debug)]
enum Layer<'a> {
    /// Any bytes, as a registry may serve them.
    Raw(&'a [u8]),
    /// A well-formed archive of the entries, gzipped or not.
    Built { gzip: bool, entries: Vec<Entry<'a>> },
}

#[derive(Arbitrary, Debug)]
struct Entry<'a> {
    kind: Kind,
    path: Vec<Part<'a>>,
    /// For links.
    link: Vec<Part<'a>>,
    mode: u16,
    uid: u16,
    mtime: u32,
    /// For files and entries of other types.
    data: &'a [u8],
    /// Written as a PAX `SCHILY.xattr.*` record before the entry.
    xattr: Option<(XattrName<'a>, &'a [u8])>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Kind {
    File,
    Dir,
    Symlink,
    HardLink,
    Fifo,
    Char,
    Block,
    /// Any type byte: PAX and GNU headers, sparse files, unknown ones.
    Other(u8),
}

/// A path component; names a layer is likely to fight over come often.
#[derive(Arbitrary, Debug)]
enum Part<'a> {
    /// The victim directory's absolute path (an absolute name that lands
    /// where it is seen, were it followed).
    Victim,
    Up,
    Here,
    Known(u8),
    Any(&'a str),
}

const KNOWN: [&str; 6] = ["a", "victim", "file", ".wh.a", ".wh..wh..opq", ".wh."];

#[derive(Arbitrary, Debug)]
enum XattrName<'a> {
    Known(u8),
    Any(&'a str),
}

const KNOWN_XATTRS: [&str; 5] = [
    "user.a",
    "trusted.overlay.opaque",
    "trusted.overlay.redirect",
    "security.selinux",
    "security.capability",
];

/// Where a layer is unpacked: `layer/` deep inside, with `victim/` (a
/// file and an empty directory) and the blob beside it.
struct Sandbox {
    _root: tempfile::TempDir,
    base: PathBuf,
    depth: usize,
}

const SANDBOX_DEPTH: usize = 4;

impl Sandbox {
    fn new() -> Sandbox {
        let root = tempfile::tempdir().expect("a temporary directory");
        let mut base = root.path().to_path_buf();
        for i in 0..SANDBOX_DEPTH {
            base.push(format!("d{i}"));
        }
        fs::create_dir_all(base.join("layer")).expect("the layer directory");
        fs::create_dir_all(base.join("victim/dir")).expect("the victim directory");
        fs::write(base.join("victim/file"), b"victim").expect("the victim file");
        Sandbox {
            base,
            depth: SANDBOX_DEPTH,
            _root: root,
        }
    }

    fn root(&self) -> &Path {
        self._root.path()
    }

    fn layer(&self) -> PathBuf {
        self.base.join("layer")
    }
}

/// Components of a path beyond these are dropped: short paths that
/// collide are what the checks are about, and the fuzzer finds them sooner
/// in a small space.
const MAX_PARTS: usize = 4;

/// Renders `parts` as a path, dropping the `..`s beyond `max_up`.
fn render(parts: &[Part<'_>], victim: &Path, max_up: usize) -> String {
    let mut ups = 0;
    let mut names = Vec::new();
    for part in parts.iter().take(MAX_PARTS) {
        let name = match part {
            Part::Victim => victim.to_str().expect("a UTF-8 temporary path").to_owned(),
            Part::Up if ups >= max_up => continue,
            Part::Up => {
                ups += 1;
                "..".to_owned()
            }
            Part::Here => ".".to_owned(),
            Part::Known(i) => KNOWN[usize::from(*i) % KNOWN.len()].to_owned(),
            Part::Any(s) => {
                let s: String = s.chars().filter(|c| !matches!(c, '/' | '\0')).collect();
                // Dots and nothing are components of their own kind, above.
                if matches!(s.as_str(), "" | "." | "..") {
                    "x".to_owned()
                } else {
                    s
                }
            }
        };
        names.push(name);
    }
    names.join("/")
}

/// How many levels below the layer `parts` names.
fn levels(parts: &[Part<'_>]) -> usize {
    let parts = &parts[..parts.len().min(MAX_PARTS)];
    let names = parts
        .iter()
        .filter(|p| matches!(p, Part::Known(_) | Part::Any(_)))
        .count();
    let ups = parts.iter().filter(|p| matches!(p, Part::Up)).count();
    names.saturating_sub(ups)
}

/// A PAX record: `<length> <key>=<value>\n`, its length counting itself.
fn pax_record(key: &str, value: &[u8]) -> Vec<u8> {
    let rest = key.len() + value.len() + 3;
    let mut len = rest + 1;
    while len != rest + len.to_string().len() {
        len = rest + len.to_string().len();
    }
    let mut record = format!("{len} {key}=").into_bytes();
    record.extend_from_slice(value);
    record.push(b'\n');
    record
}

/// Appends a header of `kind` named `name` (a GNU long name before it if
/// the name does not fit).
fn append(
    archive: &mut tar::Builder<Vec<u8>>,
    mut header: Header,
    name: &str,
    link: &str,
    data: &[u8],
) {
    for (value, long_kind) in [(name, b'L'), (link, b'K')] {
        if value.len() > 100 {
            let mut long = Header::new_gnu();
            long.as_gnu_mut().expect("a GNU header").name[..13].copy_from_slice(b"././@LongLink");
            long.set_entry_type(EntryType::new(long_kind));
            long.set_size(value.len() as u64 + 1);
            long.set_cksum();
            let mut data = value.as_bytes().to_vec();
            data.push(0);
            archive.append(&long, &data[..]).expect("writing to memory");
        }
    }
    let gnu = header.as_gnu_mut().expect("a GNU header");
    let name = &name.as_bytes()[..name.len().min(100)];
    gnu.name[..name.len()].copy_from_slice(name);
    let link = &link.as_bytes()[..link.len().min(100)];
    gnu.linkname[..link.len()].copy_from_slice(link);
    header.set_size(data.len() as u64);
    header.set_cksum();
    archive.append(&header, data).expect("writing to memory");
}

fn build(entries: &[Entry<'_>], sandbox: &Sandbox) -> Vec<u8> {
    let victim = sandbox.base.join("victim");
    let mut archive = tar::Builder::new(Vec::new());
    for entry in entries {
        let path = render(&entry.path, &victim, sandbox.depth + 1);
        // From the layer, `depth + 1` `..`s climb to the sandbox's top. A
        // hard link's target is named from the layer; a symlink's from its
        // own directory, one level more per name in its path. (A victim
        // part in the path makes it deeper still, so fewer are allowed
        // than could be.)
        let max_up = match entry.kind {
            Kind::Symlink => levels(&entry.path) + sandbox.depth,
            _ => sandbox.depth + 1,
        };
        let link = render(&entry.link, &victim, max_up);
        if let Some((name, value)) = &entry.xattr {
            let name = match name {
                XattrName::Known(i) => KNOWN_XATTRS[usize::from(*i) % KNOWN_XATTRS.len()],
                XattrName::Any(s) => s,
            };
            let record = pax_record(&format!("SCHILY.xattr.{name}"), value);
            let mut pax = Header::new_gnu();
            pax.set_entry_type(EntryType::XHeader);
            append(&mut archive, pax, "pax", "", &record);
        }
        let (kind, data, link): (EntryType, &[u8], &str) = match entry.kind {
            Kind::File => (EntryType::Regular, entry.data, ""),
            Kind::Dir => (EntryType::Directory, b"", ""),
            Kind::Symlink => (EntryType::Symlink, b"", &link),
            Kind::HardLink => (EntryType::Link, b"", &link),
            Kind::Fifo => (EntryType::Fifo, b"", ""),
            Kind::Char => (EntryType::Char, b"", ""),
            Kind::Block => (EntryType::Block, b"", ""),
            Kind::Other(byte) => (EntryType::new(byte), entry.data, &link),
        };
        let mut header = Header::new_gnu();
        header.set_entry_type(kind);
        header.set_mode(u32::from(entry.mode) & 0o7777);
        header.set_uid(u64::from(entry.uid));
        header.set_gid(u64::from(entry.uid));
        header.set_mtime(u64::from(entry.mtime));
        append(&mut archive, header, &path, link, data);
    }
    archive.into_inner().expect("writing to memory")
}

/// What is outside the layer directory, by path: type and mode, owner,
/// size, link count, modification time and, for files, content.
fn outside_layer(sandbox: &Sandbox) -> BTreeMap<PathBuf, String> {
    let layer = sandbox.layer();
    let mut seen = BTreeMap::new();
    let mut stack = vec![sandbox.root().to_path_buf()];
    while let Some(path) = stack.pop() {
        if path == layer {
            continue;
        }
        let meta = fs::symlink_metadata(&path).expect("what the walk listed");
        let content = if meta.is_file() {
            fs::read(&path).expect("a file outside the layer")
        } else {
            Vec::new()
        };
        seen.insert(
            path.clone(),
            format!(
                "mode {:o} owner {}:{} size {} links {} mtime {}.{} {content:?}",
                meta.mode(),
                meta.uid(),
                meta.gid(),
                meta.len(),
                meta.nlink(),
                meta.mtime(),
                meta.mtime_nsec(),
            ),
        );
        if meta.is_dir() {
            for child in fs::read_dir(&path).expect("a directory outside the layer") {
                stack.push(child.expect("a directory entry").path());
            }
        }
    }
    seen
}

/// The names of the `trusted.*` xattrs of `path` (not followed).
fn trusted_xattrs(path: &Path) -> Vec<(String, Vec<u8>)> {
    let c_path = CString::new(path.as_os_str().as_bytes()).expect("no NUL in a listed path");
    let mut names = vec![0u8; 64 * 1024];
    // SAFETY: c_path is a valid C string and names has names.len()
    // writable bytes.
    let len = unsafe { libc::llistxattr(c_path.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
    let Ok(len) = usize::try_from(len) else {
        return Vec::new();
    };
    names[..len]
        .split(|&b| b == 0)
        .filter(|name| name.starts_with(b"trusted."))
        .map(|name| {
            let c_name = CString::new(name).expect("split at NULs");
            let mut value = vec![0u8; 64 * 1024];
            // SAFETY: both are valid C strings and value has value.len()
            // writable bytes.
            let n = unsafe {
                libc::lgetxattr(
                    c_path.as_ptr(),
                    c_name.as_ptr(),
                    value.as_mut_ptr().cast(),
                    value.len(),
                )
            };
            value.truncate(usize::try_from(n).unwrap_or(0));
            (String::from_utf8_lossy(name).into_owned(), value)
        })
        .collect()
}

/// Checks every entry of the unpacked layer.
fn check_layer(layer: &Path) {
    let mut stack = vec![layer.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = fs::symlink_metadata(&path).expect("what the walk listed");
        let kind = meta.file_type();
        assert!(!kind.is_block_device(), "a block device {path:?}");
        if kind.is_char_device() {
            assert_eq!(meta.rdev(), 0, "a character device {path:?}");
        }
        for (name, value) in trusted_xattrs(&path) {
            assert!(
                name == "trusted.overlay.opaque" && value == b"y",
                "{path:?} has {name} = {value:?}"
            );
        }
        if kind.is_dir() {
            for child in fs::read_dir(&path).expect("a directory in the layer") {
                stack.push(child.expect("a directory entry").path());
            }
        }
    }
}

fuzz_target!(|layer: Layer<'_>| {
    let sandbox = Sandbox::new();
    let (blob, uncompressed) = match &layer {
        Layer::Raw(bytes) => (bytes.to_vec(), bytes.to_vec()),
        Layer::Built { gzip, entries } => {
            let tar = build(entries, &sandbox);
            let blob = if *gzip {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(&tar).expect("writing to memory");
                gz.finish().expect("writing to memory")
            } else {
                tar.clone()
            };
            (blob, tar)
        }
    };
    let blob_path = sandbox.base.join("blob");
    fs::write(&blob_path, &blob).expect("the blob");
    let before = outside_layer(&sandbox);
    // Either outcome is fine; what it did to the disk is what is checked.
    let _ = unpack_layer(&blob_path, &sandbox.layer(), &Digest::of(&uncompressed));
    let after = outside_layer(&sandbox);
    for (path, was) in &before {
        assert_eq!(after.get(path), Some(was), "{path:?} changed");
    }
    for path in after.keys() {
        assert!(before.contains_key(path), "{path:?} appeared");
    }
    check_layer(&sandbox.layer());
});
