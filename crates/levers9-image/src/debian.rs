//! A Python base image made from Debian packages, for a machine with no
//! registry to pull one from (`levers9 up`).
//!
//! The packages of `python3.X` and their dependencies are downloaded with
//! `apt-get download` and unpacked with `dpkg-deb -x` (no maintainer
//! scripts run), documentation is dropped, and the tree becomes one gzip
//! layer of an OCI image in the local image storage. It takes the host's
//! package sources and architecture, so it works on Debian and Ubuntu.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use flate2::write::GzEncoder;
use sha2::{Digest as _, Sha256};

use crate::error::{ImageError, Result};
use crate::layout::{self, Descriptor, Layout};

/// Directories of no use to a function, dropped from the image.
const DROPPED: &[&str] = &[
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/lintian",
    // Perl comes in for dpkg's scripts, which never run in an image.
    "usr/share/perl",
    "usr/share/perl5",
    "usr/lib/x86_64-linux-gnu/perl",
    "usr/lib/x86_64-linux-gnu/perl-base",
    "usr/lib/x86_64-linux-gnu/perl5",
    "usr/lib/aarch64-linux-gnu/perl",
    "usr/lib/aarch64-linux-gnu/perl-base",
];

fn failed(reason: impl Into<String>) -> ImageError {
    ImageError::BaseImage {
        reason: reason.into(),
    }
}

/// Builds `name` (`<repository>:<python version>`, e.g.
/// `levers9/python:3.11`) into `layout` unless it is there already; returns
/// whether it built. `progress` hears what is being done.
pub fn ensure_python_image(layout: &Layout, name: &str, progress: &dyn Fn(&str)) -> Result<bool> {
    let (repository, version) = name
        .rsplit_once(':')
        .ok_or_else(|| failed(format!("{name:?} has no tag: expected NAME:PYTHON_VERSION")))?;
    if layout.resolve(repository, version)?.is_some() {
        return Ok(false);
    }
    if !version
        .split('.')
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(failed(format!(
            "the tag of {name:?} is not a Python version such as 3.11"
        )));
    }
    for tool in ["apt-cache", "apt-get", "dpkg-deb", "dpkg"] {
        if run(Command::new(tool).arg("--version")).is_err() {
            return Err(failed(format!(
                "{tool} is missing: the base image is built from Debian packages, on Debian or \
                 Ubuntu; elsewhere set imageService.runner.baseImageRegistry \
                 (LEVERS9_BASE_IMAGE_REGISTRY) to a registry that has {name}"
            )));
        }
    }
    let work = tempfile::tempdir().map_err(|e| failed(format!("cannot make a work dir: {e}")))?;
    let rootfs = work.path().join("rootfs");
    let debs = work.path().join("debs");
    for dir in [&rootfs, &debs] {
        std::fs::create_dir_all(dir).map_err(|e| failed(format!("{}: {e}", dir.display())))?;
    }
    progress(&format!("building {name} from Debian packages (once)"));
    let packages = packages(version)?;
    progress(&format!("downloading {} packages", packages.len()));
    let all = run(Command::new("apt-get")
        .args(["download", "-qq"])
        .args(&packages)
        .current_dir(&debs));
    if all.is_err() {
        // A virtual package has no file of its own (its provider is listed
        // too) and fails the whole call: fetch them one by one instead.
        for package in &packages {
            let _ = run(Command::new("apt-get")
                .args(["download", "-qq", package])
                .current_dir(&debs));
        }
    }
    let mut unpacked = 0;
    for entry in read_sorted(&debs)? {
        run(Command::new("dpkg-deb").arg("-x").arg(&entry).arg(&rootfs))?;
        unpacked += 1;
    }
    let python = rootfs.join("usr/bin").join(format!("python{version}"));
    if !python.exists() {
        return Err(failed(format!(
            "the packages have no python{version} ({unpacked} unpacked): this machine's package \
             sources do not offer Python {version}; pick another version with \
             imageService.runner.baseImage, or set imageService.runner.baseImageRegistry"
        )));
    }
    finish_tree(&rootfs, version)?;
    progress("byte-compiling the standard library");
    if let Err(error) = compile_stdlib(&rootfs, version) {
        progress(&format!(
            "the standard library stays uncompiled ({error}): each container compiles what it \
             imports, about 120 ms of CPU per start"
        ));
    }
    progress("packing the image");
    let manifest = pack(layout, &rootfs)?;
    layout.tag(name, &manifest)?;
    progress(&format!("{name} is in the local image storage"));
    Ok(true)
}

/// The packages Python `version` needs, its own included.
fn packages(version: &str) -> Result<Vec<String>> {
    let roots = [
        format!("python{version}-minimal"),
        format!("python{version}"),
        format!("libpython{version}-stdlib"),
    ];
    let list = || -> Result<Vec<String>> {
        let out = run(Command::new("apt-cache")
            .args([
                "depends",
                "--recurse",
                "--no-recommends",
                "--no-suggests",
                "--no-conflicts",
                "--no-breaks",
                "--no-replaces",
                "--no-enhances",
            ])
            .args(&roots))?;
        let mut names: Vec<String> = out
            .lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit()))
            .map(str::to_owned)
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    };
    match list() {
        Ok(names) if !names.is_empty() => Ok(names),
        // The package lists may never have been fetched on a fresh machine.
        _ => {
            run(Command::new("apt-get").args(["update", "-qq"]))?;
            list()
        }
    }
}

/// What dpkg's scripts would have done that a container needs: the usual
/// top-level directories and links, `python3`, no documentation.
fn finish_tree(rootfs: &Path, version: &str) -> Result<()> {
    let io = |what: &Path, e: std::io::Error| failed(format!("{}: {e}", what.display()));
    for dropped in DROPPED {
        let path = rootfs.join(dropped);
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(|e| io(&path, e))?;
        }
    }
    for dir in ["proc", "sys", "dev", "tmp", "etc", "root", "run"] {
        let path = rootfs.join(dir);
        std::fs::create_dir_all(&path).map_err(|e| io(&path, e))?;
    }
    for link in ["bin", "lib", "lib64", "sbin"] {
        let (path, target) = (rootfs.join(link), rootfs.join("usr").join(link));
        if !path.exists() && path.symlink_metadata().is_err() && target.is_dir() {
            std::os::unix::fs::symlink(format!("usr/{link}"), &path).map_err(|e| io(&path, e))?;
        }
    }
    let python3 = rootfs.join("usr/bin/python3");
    if python3.symlink_metadata().is_err() {
        std::os::unix::fs::symlink(format!("python{version}"), &python3)
            .map_err(|e| io(&python3, e))?;
    }
    Ok(())
}

/// Byte-compiles the image's standard library with the image's own
/// interpreter, as Debian's postinst (py3compile) would; unpacked with
/// `dpkg-deb -x` it has no .pyc files, and every container start would
/// compile the modules the runner imports. Needs root (chroot), as the
/// worker does.
fn compile_stdlib(rootfs: &Path, version: &str) -> Result<()> {
    run(Command::new("chroot")
        .arg(rootfs)
        .arg(format!("/usr/bin/python{version}"))
        .args(["-m", "compileall", "-q"])
        .arg(format!("/usr/lib/python{version}")))?;
    Ok(())
}

/// Writes `tree` as a one-layer image into `layout`; the manifest.
fn pack(layout: &Layout, tree: &Path) -> Result<Descriptor> {
    let mut hashing = Hashing {
        inner: GzEncoder::new(Vec::new(), flate2::Compression::default()),
        hash: Sha256::new(),
    };
    {
        let mut tar = tar::Builder::new(&mut hashing);
        tar.mode(tar::HeaderMode::Deterministic);
        tar.follow_symlinks(false);
        tar.append_dir_all(".", tree)
            .map_err(|e| failed(format!("cannot pack the image: {e}")))?;
        tar.finish()
            .map_err(|e| failed(format!("cannot pack the image: {e}")))?;
    }
    let diff_id = format!("sha256:{}", hex::encode(hashing.hash.finalize()));
    let gz = hashing
        .inner
        .finish()
        .map_err(|e| failed(format!("cannot pack the image: {e}")))?;
    let layer = layout.put_blob(layout::LAYER_MEDIA_TYPE, &gz)?;
    let config = serde_json::json!({
        "architecture": architecture()?,
        "os": "linux",
        "config": {
            "Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"],
            "Cmd": ["python3"],
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    });
    let config = layout.put_blob(layout::CONFIG_MEDIA_TYPE, config.to_string().as_bytes())?;
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": layout::MANIFEST_MEDIA_TYPE,
        "config": config,
        "layers": [layer],
    });
    layout.put_blob(layout::MANIFEST_MEDIA_TYPE, manifest.to_string().as_bytes())
}

/// The OCI name of this machine's architecture.
fn architecture() -> Result<String> {
    let dpkg = run(Command::new("dpkg").arg("--print-architecture"))?;
    Ok(match dpkg.trim() {
        "armhf" => "arm".to_owned(),
        "i386" => "386".to_owned(),
        other => other.to_owned(),
    })
}

/// Feeds what is written to `inner` and to a sha256.
struct Hashing<W> {
    inner: W,
    hash: Sha256,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn read_sorted(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| failed(format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    Ok(entries)
}

/// Runs a command to its end; its stdout, or an error with its stderr.
fn run(command: &mut Command) -> Result<String> {
    let program = command.get_program().to_string_lossy().into_owned();
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed(format!("cannot run {program}: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(failed(format!(
            "{program} failed ({}): {}",
            out.status,
            stderr.trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_packs_into_a_tagged_one_layer_image() {
        let dir = tempfile::tempdir().expect("dir");
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("usr/bin")).expect("mkdir");
        std::fs::write(tree.join("usr/bin/python3.11"), b"#!").expect("write");
        std::os::unix::fs::symlink("python3.11", tree.join("usr/bin/python3")).expect("link");
        let layout = Layout::open(&dir.path().join("layout")).expect("layout");

        let manifest = pack(&layout, &tree).expect("pack");
        layout.tag("levers9/python:3.11", &manifest).expect("tag");

        let found = layout.resolve("levers9/python", "3.11").expect("resolve");
        assert_eq!(found.as_ref().map(|m| &m.digest), Some(&manifest.digest));
        let bytes =
            std::fs::read(layout.blob_path(&manifest.digest).expect("stored")).expect("read");
        let parsed: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        let layer = parsed["layers"][0]["digest"].as_str().expect("layer");
        let gz = std::fs::read(layout.blob_path(layer).expect("layer stored")).expect("read");
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(gz.as_slice()));
        let mut links = Vec::new();
        for entry in archive.entries().expect("entries") {
            let entry = entry.expect("entry");
            if entry.header().entry_type().is_symlink() {
                links.push(entry.path().expect("path").display().to_string());
            }
        }
        assert_eq!(links, ["usr/bin/python3"], "symlinks stay links");
    }

    #[test]
    fn a_name_without_a_python_version_is_refused_before_any_work() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout::open(dir.path()).expect("layout");
        let quiet = |_: &str| {};
        for name in ["levers9/python", "levers9/python:latest"] {
            let err = ensure_python_image(&layout, name, &quiet).expect_err(name);
            assert!(matches!(err, ImageError::BaseImage { .. }), "{err}");
        }
    }
}
