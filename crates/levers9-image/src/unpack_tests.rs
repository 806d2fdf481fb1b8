use std::io::Write;
use std::os::unix::fs::FileTypeExt;

use super::*;

/// One tar entry, written with raw header bytes so that tests can create
/// the hostile names (`../x`, `/abs`) that `tar::Builder` refuses.
enum E<'a> {
    Dir(&'a str),
    File(&'a str, &'a [u8]),
    Symlink(&'a str, &'a str),
    HardLink(&'a str, &'a str),
    Char(&'a str),
}

fn tar_of(entries: &[E<'_>]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        let (path, kind, data, link): (&str, EntryType, &[u8], Option<&str>) = match e {
            E::Dir(p) => (p, EntryType::Directory, b"", None),
            E::File(p, d) => (p, EntryType::Regular, d, None),
            E::Symlink(p, t) => (p, EntryType::Symlink, b"", Some(t)),
            E::HardLink(p, t) => (p, EntryType::Link, b"", Some(t)),
            E::Char(p) => (p, EntryType::Char, b"", None),
        };
        let gnu = h.as_gnu_mut().unwrap();
        gnu.name[..path.len()].copy_from_slice(path.as_bytes());
        if let Some(t) = link {
            gnu.linkname[..t.len()].copy_from_slice(t.as_bytes());
        }
        h.set_entry_type(kind);
        h.set_mode(if kind == EntryType::Directory {
            0o755
        } else {
            0o644
        });
        h.set_size(data.len() as u64);
        h.set_mtime(1_700_000_000);
        h.set_uid(0);
        h.set_gid(0);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    b.into_inner().unwrap()
}

fn write_blob(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).unwrap();
    p
}

fn unpack_bytes(tar: &[u8], compressed: &[u8]) -> (tempfile::TempDir, Result<u64, UnpackError>) {
    let tmp = tempfile::tempdir().unwrap();
    let blob = write_blob(tmp.path(), "blob", compressed);
    let dest = tmp.path().join("layer");
    fs::create_dir(&dest).unwrap();
    let result = unpack_layer(&blob, &dest, &Digest::of(tar));
    (tmp, result)
}

fn invalid_reason(r: Result<u64, UnpackError>) -> String {
    match r {
        Err(UnpackError::Invalid(reason)) => reason,
        other => panic!("expected an invalid layer, got {other:?}"),
    }
}

#[test]
fn layer_paths_cannot_escape() {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    let cases: Vec<(Vec<E<'_>>, &str)> = vec![
        (vec![E::File("../escaped", b"x")], "\"..\""),
        (vec![E::File("a/../../escaped", b"x")], "\"..\""),
        (vec![E::File("/escaped-absolute", b"x")], "absolute"),
        // A symlink to a directory outside, then a file written through it.
        (
            vec![
                E::Symlink("link", outside.path().to_str().unwrap()),
                E::File("link/victim", b"pwned"),
            ],
            "through the symlink",
        ),
        // Same, with a relative symlink climbing out of the layer.
        (
            vec![
                E::Symlink("up", "../../../../../.."),
                E::File("up/tmp/victim", b"pwned"),
            ],
            "through the symlink",
        ),
        // A hard link to a file outside the layer.
        (
            vec![E::HardLink("passwd", "../../../../etc/passwd")],
            "\"..\"",
        ),
        (vec![E::HardLink("passwd", "/etc/passwd")], "absolute"),
        // A hard link reached through a symlinked directory.
        (
            vec![
                E::Symlink("etc", "/etc"),
                E::HardLink("passwd", "etc/passwd"),
            ],
            "through the symlink",
        ),
        // A whiteout written through a symlink must not delete outside files.
        (
            vec![
                E::Symlink("link", outside.path().to_str().unwrap()),
                E::File("link/.wh.victim", b""),
            ],
            "through the symlink",
        ),
    ];
    for (entries, expected) in cases {
        fs::write(&victim, b"original").unwrap();
        let tar = tar_of(&entries);
        let (tmp, result) = unpack_bytes(&tar, &tar);
        let reason = invalid_reason(result);
        assert!(
            reason.contains(expected),
            "{reason:?} should mention {expected:?}"
        );
        assert_eq!(
            fs::read(&victim).unwrap(),
            b"original",
            "the outside file was touched"
        );
        assert!(!tmp.path().join("escaped").exists());
        assert!(!Path::new("/escaped-absolute").exists());
    }
    // A symlink that points outside is fine as long as nothing goes through it.
    let tar = tar_of(&[E::Symlink("etc-link", "/etc"), E::Symlink("rel", "../../x")]);
    let (tmp, result) = unpack_bytes(&tar, &tar);
    result.unwrap();
    assert_eq!(
        fs::read_link(tmp.path().join("layer/etc-link")).unwrap(),
        Path::new("/etc")
    );
}

#[test]
fn whiteouts_become_overlay_whiteouts() {
    let tar = tar_of(&[
        E::Dir("a/"),
        E::File("a/.wh.gone", b""),
        E::File("b/.wh..wh..opq", b""),
        E::File("b/new", b"new"),
        E::File(".wh..wh.plnk", b""),
        E::Char("dev-node"),
    ]);
    let (tmp, result) = unpack_bytes(&tar, &tar);
    result.unwrap();
    let layer = tmp.path().join("layer");
    let gone = fs::symlink_metadata(layer.join("a/gone")).unwrap();
    assert!(gone.file_type().is_char_device());
    assert_eq!(gone.rdev(), 0);
    assert!(!layer.join("a/.wh.gone").exists());
    let mut value = [0u8; 4];
    let c_path = CString::new(layer.join("b").as_os_str().as_bytes()).unwrap();
    let c_name = CString::new(OPAQUE_XATTR).unwrap();
    // SAFETY: valid C strings and a buffer of the given length.
    let n = unsafe {
        libc::lgetxattr(
            c_path.as_ptr(),
            c_name.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    assert_eq!(n, 1, "opaque xattr missing: {}", io::Error::last_os_error());
    assert_eq!(value[0], b'y');
    assert_eq!(fs::read(layer.join("b/new")).unwrap(), b"new");
    assert!(!layer.join("b/.wh..wh..opq").exists());
    assert!(!layer.join(".wh..wh.plnk").exists());
    assert!(
        !layer.join("dev-node").exists(),
        "device nodes are never created"
    );
}

#[test]
fn gzip_zstd_and_plain_layers_unpack_alike() {
    let tar = tar_of(&[
        E::Dir("bin/"),
        E::File("bin/tool", b"#!/bin/sh\necho hi\n"),
        E::HardLink("bin/tool2", "bin/tool"),
        E::Symlink("bin/t", "tool"),
    ]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    let gz = gz.finish().unwrap();
    let zst = zstd::encode_all(&tar[..], 3).unwrap();
    for blob in [&tar, &gz, &zst] {
        let (tmp, result) = unpack_bytes(&tar, blob);
        assert!(result.unwrap() > 0);
        let layer = tmp.path().join("layer");
        assert_eq!(
            fs::read(layer.join("bin/tool2")).unwrap(),
            b"#!/bin/sh\necho hi\n"
        );
        assert_eq!(
            fs::read_link(layer.join("bin/t")).unwrap(),
            Path::new("tool")
        );
    }
}

#[test]
fn diff_id_mismatch_is_rejected() {
    let tar = tar_of(&[E::File("f", b"data")]);
    let tmp = tempfile::tempdir().unwrap();
    let blob = write_blob(tmp.path(), "blob", &tar);
    let dest = tmp.path().join("layer");
    fs::create_dir(&dest).unwrap();
    let reason = invalid_reason(unpack_layer(&blob, &dest, &Digest::of(b"something else")));
    assert!(reason.contains("diff_id"), "{reason}");
}

#[test]
fn later_entries_replace_earlier_ones() {
    let tar = tar_of(&[
        E::File("x", b"file"),
        E::Dir("x/"),
        E::File("x/inner", b"inner"),
        E::Symlink("y", "/nowhere"),
        E::File("y", b"replaced the symlink"),
    ]);
    let (tmp, result) = unpack_bytes(&tar, &tar);
    result.unwrap();
    let layer = tmp.path().join("layer");
    assert_eq!(fs::read(layer.join("x/inner")).unwrap(), b"inner");
    assert!(fs::symlink_metadata(layer.join("y")).unwrap().is_file());
}
