//! Root file systems through real overlay mounts.

mod common;

use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::process::Command;
use std::time::Instant;

use common::{busybox_image, id, in_mountinfo, store, ImageBuilder};

const UNBOUNDED: u64 = u64::MAX;

#[tokio::test]
async fn whiteout_hides_a_lower_file_in_the_rootfs() {
    let b = ImageBuilder::new();
    b.busybox()
        .write("data/keep.txt", "keep\n")
        .write("data/gone.txt", "gone\n")
        .layer();
    b.remove("data/gone.txt").layer();
    let pushed = b.push("whiteout");
    let (_root, store) = store(UNBOUNDED);
    let image = store.pull(&pushed.digest_ref).await.unwrap();
    assert_eq!(image.layers.len(), 2);

    // The OCI whiteout became an overlay whiteout (char device 0/0).
    let upper_layer = store.layer_dir(&image.layers[1].digest);
    let whiteout = fs::symlink_metadata(upper_layer.join("data/gone.txt")).unwrap();
    assert!(whiteout.file_type().is_char_device());
    assert!(!upper_layer.join("data/.wh.gone.txt").exists());

    let rootfs = store.prepare_rootfs(&image, &id("c1")).await.unwrap();
    assert_eq!(
        fs::read_to_string(rootfs.path.join("data/keep.txt")).unwrap(),
        "keep\n"
    );
    assert!(!rootfs.path.join("data/gone.txt").exists());
    let names: Vec<_> = fs::read_dir(rootfs.path.join("data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["keep.txt"]);
    store.release(&id("c1")).await.unwrap();
}

#[tokio::test]
async fn opaque_directory_hides_lower_contents() {
    let b = ImageBuilder::new();
    b.busybox()
        .write("opq/lower-1.txt", "1")
        .write("opq/sub/lower-2.txt", "2")
        .write("other/stays.txt", "stays")
        .layer();
    b.raw_layer(&[
        ("opq", None),
        ("opq/.wh..wh..opq", Some("")),
        ("opq/new.txt", Some("new")),
    ]);
    let pushed = b.push("opaque");
    let (_root, store) = store(UNBOUNDED);
    let image = store.pull(&pushed.digest_ref).await.unwrap();
    let rootfs = store.prepare_rootfs(&image, &id("c1")).await.unwrap();

    let names: Vec<_> = fs::read_dir(rootfs.path.join("opq"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["new.txt"]);
    assert_eq!(
        fs::read_to_string(rootfs.path.join("other/stays.txt")).unwrap(),
        "stays"
    );
    store.release(&id("c1")).await.unwrap();
}

#[tokio::test]
async fn rootfs_writes_stay_private_to_the_container() {
    let pushed = busybox_image("private");
    let (_root, store) = store(UNBOUNDED);
    let image = store.pull(&pushed.digest_ref).await.unwrap();

    let started = Instant::now();
    let a = store.prepare_rootfs(&image, &id("a")).await.unwrap();
    eprintln!(
        "warm prepare_rootfs (layers cached): {:?}",
        started.elapsed()
    );
    let b = store.prepare_rootfs(&image, &id("b")).await.unwrap();
    assert_ne!(a.path, b.path);

    fs::write(a.path.join("etc/hello.txt"), "changed by a\n").unwrap();
    fs::write(a.path.join("tmp/new-in-a"), "a").unwrap();
    fs::remove_file(a.path.join("bin/ls")).unwrap();

    assert_eq!(
        fs::read_to_string(b.path.join("etc/hello.txt")).unwrap(),
        "hello from the image\n"
    );
    assert!(!b.path.join("tmp/new-in-a").exists());
    assert!(b.path.join("bin/ls").exists());
    // The shared layer itself is untouched.
    let layer = store.layer_dir(&image.layers[0].digest);
    assert_eq!(
        fs::read_to_string(layer.join("etc/hello.txt")).unwrap(),
        "hello from the image\n"
    );
    assert!(!layer.join("tmp/new-in-a").exists());

    // The rootfs is usable as a container root.
    let out = Command::new("chroot")
        .arg(&b.path)
        .args(["/bin/sh", "-c", "cat /etc/hello.txt"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hello from the image\n"
    );

    store.release(&id("a")).await.unwrap();
    store.release(&id("b")).await.unwrap();
}

#[tokio::test]
async fn release_unmounts_and_removes_everything() {
    let pushed = busybox_image("release");
    let (_root, store) = store(UNBOUNDED);
    let image = store.pull(&pushed.digest_ref).await.unwrap();
    let rootfs = store.prepare_rootfs(&image, &id("c1")).await.unwrap();
    assert!(in_mountinfo(&rootfs.path));
    assert_eq!(store.usage().pinned_layers, 1);
    // One id, one rootfs.
    let err = store.prepare_rootfs(&image, &id("c1")).await.unwrap_err();
    assert!(
        err.to_string().contains("already has a root filesystem"),
        "{err}"
    );

    store.release(&id("c1")).await.unwrap();
    assert!(!in_mountinfo(&rootfs.path));
    assert!(!store.root().join("containers/c1").exists());
    assert_eq!(
        fs::read_dir(store.root().join("containers"))
            .unwrap()
            .count(),
        0
    );
    assert_eq!(store.usage().pinned_layers, 0);
    // The layers stay cached for the next container; releasing is idempotent.
    assert!(store.has_layer(&image.layers[0].digest));
    store.release(&id("c1")).await.unwrap();
    // The id can be used again.
    let again = store.prepare_rootfs(&image, &id("c1")).await.unwrap();
    store.release(&again.container_id).await.unwrap();
    assert!(!in_mountinfo(&again.path));
}

#[tokio::test]
async fn forty_layers_fit_in_one_overlay_mount() {
    let b = ImageBuilder::new();
    b.busybox().layer();
    for i in 1..40 {
        let path = format!("layers/{i}.txt");
        b.raw_layer(&[("layers", None), (&path, Some(&i.to_string()))]);
    }
    let pushed = b.push("forty");
    let (_root, store) = store(UNBOUNDED);
    let image = store.pull(&pushed.digest_ref).await.unwrap();
    assert_eq!(image.layers.len(), 40);
    let rootfs = store.prepare_rootfs(&image, &id("c1")).await.unwrap();
    for i in 1..40 {
        assert_eq!(
            fs::read_to_string(rootfs.path.join(format!("layers/{i}.txt"))).unwrap(),
            i.to_string()
        );
    }
    assert!(rootfs.path.join("bin/busybox").is_file());
    store.release(&id("c1")).await.unwrap();
}
