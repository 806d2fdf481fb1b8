//! Pulling from a real registry: digests, tags, single flight, verification,
//! errors, eviction and restarts.

mod common;

use std::fs;
use std::time::{Duration, Instant};

use common::{busybox_image, id, registry, registry_dir, store, ImageBuilder};
use levers9_image::{Digest, ImageError, ImageStore, ImageStoreConfig};

const UNBOUNDED: u64 = u64::MAX;

#[tokio::test]
async fn pull_by_digest_unpacks_the_files() {
    let pushed = busybox_image("busybox");
    let (_root, store) = store(UNBOUNDED);

    let started = Instant::now();
    let image = store.pull(&pushed.digest_ref).await.unwrap();
    eprintln!(
        "cold pull + unpack of the busybox image: {:?}",
        started.elapsed()
    );

    assert_eq!(image.digest.as_str(), pushed.digest);
    assert_eq!(image.layers.len(), 1);
    assert_eq!(image.layers[0].digest.as_str(), pushed.layers[0]);
    let layer = store.layer_dir(&image.layers[0].digest);
    assert_eq!(
        fs::read_to_string(layer.join("etc/hello.txt")).unwrap(),
        "hello from the image\n"
    );
    assert_eq!(
        fs::read(layer.join("bin/busybox")).unwrap(),
        fs::read("/bin/busybox").unwrap()
    );
    assert_eq!(
        fs::read_link(layer.join("bin/sh")).unwrap().to_str(),
        Some("busybox")
    );
    // The compressed blob is kept next to the unpacked layer.
    assert!(store
        .root()
        .join("blobs/sha256")
        .join(image.layers[0].digest.hex())
        .is_file());

    let c = &image.config;
    assert_eq!(c.entrypoint, ["/bin/sh"]);
    assert_eq!(c.cmd, ["-c", "echo hello"]);
    assert!(c.env.contains(&"GREETING=hi".to_owned()), "{:?}", c.env);
    assert_eq!(c.working_dir.as_deref(), Some("/tmp"));
    assert_eq!(c.user.as_deref(), Some("1000:1000"));
    // One config and one layer came over the network.
    assert_eq!(store.blob_downloads(), 2);

    // Pulling again by digest needs no network at all.
    let again = store.pull(&pushed.digest_ref).await.unwrap();
    assert_eq!(again, image);
    assert_eq!(store.blob_downloads(), 2);
    assert_eq!(store.manifest_fetches(), 1);
}

#[tokio::test]
async fn pull_by_tag_resolves_to_the_digest() {
    let pushed = busybox_image("tagged");
    let (_root, store) = store(UNBOUNDED);
    let image = store.pull(&pushed.tag_ref).await.unwrap();
    assert_eq!(image.digest.as_str(), pushed.digest);
    // From now on the image is named by its digest, not the tag.
    assert_eq!(image.reference.to_string(), pushed.digest_ref);
    assert_eq!(image.reference.digest(), Some(&image.digest));
    assert!(store.has_layer(&image.layers[0].digest));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_pulls_of_one_image_download_once() {
    let b = ImageBuilder::new();
    b.busybox().layer();
    b.write("data/second", "second layer\n").layer();
    let pushed = b.push("concurrent");
    let (_root, store) = store(UNBOUNDED);

    let (s1, s2) = (store.clone(), store.clone());
    let (r1, r2) = (pushed.digest_ref.clone(), pushed.tag_ref.clone());
    let a = tokio::spawn(async move { s1.pull(&r1).await });
    let b = tokio::spawn(async move { s2.pull(&r2).await });
    let (a, b) = (a.await.unwrap().unwrap(), b.await.unwrap().unwrap());

    assert_eq!(a.digest, b.digest);
    assert_eq!(a.layers, b.layers);
    // One config plus two layers: each blob exactly once.
    assert_eq!(
        store.blob_downloads(),
        3,
        "every blob must be downloaded once"
    );
    assert_eq!(store.usage().layers, 2);
}

#[tokio::test]
async fn tampered_blob_is_rejected_with_a_clear_error() {
    let pushed = busybox_image("tampered");
    let layer = Digest::parse(&pushed.layers[0]).unwrap();
    let data = registry_dir()
        .join("docker/registry/v2/blobs/sha256")
        .join(&layer.hex()[..2])
        .join(layer.hex())
        .join("data");
    // Same length, different bytes: only the digest can tell.
    let mut bytes = fs::read(&data).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs::write(&data, &bytes).unwrap();

    let (_root, store) = store(UNBOUNDED);
    let err = store.pull(&pushed.digest_ref).await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, ImageError::Corrupt { .. }), "{message}");
    assert_eq!(
        message,
        format!(
            "blob {layer} of {} does not match its digest: the registry served corrupt or tampered data",
            pushed.digest_ref
        )
    );
    // Nothing of the layer is in the cache, not even in tmp/.
    assert!(!store.root().join("blobs/sha256").join(layer.hex()).exists());
    assert!(!store.layer_dir(&layer).exists());
    assert!(!store.has_layer(&layer));
    assert_eq!(fs::read_dir(store.root().join("tmp")).unwrap().count(), 0);
}

#[tokio::test]
async fn missing_image_names_the_image() {
    let (_root, store) = store(UNBOUNDED);
    let reference = format!("{}/levers9-test/does-not-exist:v1", registry());
    let err = store.pull(&reference).await.unwrap_err();
    assert!(matches!(err, ImageError::NotFound { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "image {reference} not found in registry {}: check the name and that it was pushed",
            registry()
        )
    );

    // Same for a digest that was never pushed to an existing repository.
    let pushed = busybox_image("exists");
    let missing = format!(
        "{}@sha256:{}",
        pushed.tag_ref.trim_end_matches(":v1"),
        "0".repeat(64)
    );
    let err = store.pull(&missing).await.unwrap_err();
    assert!(matches!(err, ImageError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains(&missing), "{err}");
}

#[tokio::test]
async fn a_tag_is_resolved_once_within_its_ttl() {
    let first = busybox_image("tag-ttl");
    let b = ImageBuilder::new();
    b.busybox()
        .write("etc/hello.txt", "the tag moved\n")
        .layer();
    let second = b.push("tag-ttl-next");
    let (_root, reusing) = store(UNBOUNDED);
    let root = tempfile::tempdir().unwrap();
    let mut config = ImageStoreConfig::new(root.path());
    config.tag_ttl = Duration::ZERO;
    let asking = ImageStore::open(config).unwrap();
    let image = reusing.pull(&first.tag_ref).await.unwrap();
    assert_eq!(image.digest.as_str(), first.digest);
    let asked = reusing.manifest_fetches();

    // The tag moves to another image.
    let moved = std::process::Command::new("skopeo")
        .args([
            "copy",
            "--quiet",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
        ])
        .arg(format!("docker://{}", second.digest_ref))
        .arg(format!("docker://{}", first.tag_ref))
        .status()
        .unwrap();
    assert!(moved.success());

    // Within the TTL (10 s by default) the digest it had is reused, and
    // the registry is not asked; a store whose TTL is zero asks every time.
    let again = reusing.pull(&first.tag_ref).await.unwrap();
    assert_eq!(again.digest, image.digest);
    assert_eq!(reusing.manifest_fetches(), asked);
    let now = asking.pull(&first.tag_ref).await.unwrap();
    assert_eq!(now.digest.as_str(), second.digest);
}

#[tokio::test]
async fn restart_reuses_unpacked_layers_without_downloading() {
    let pushed = busybox_image("restart");
    let root = tempfile::tempdir().unwrap();
    let first = ImageStore::open(ImageStoreConfig::new(root.path())).unwrap();
    let image = first.pull(&pushed.digest_ref).await.unwrap();
    assert_eq!(first.blob_downloads(), 2);
    // A rootfs prepared before the restart stays pinned and releasable.
    let kept = first.prepare_rootfs(&image, &id("kept")).await.unwrap();
    // A second store on the same root while the first is open is refused.
    let err = ImageStore::open(ImageStoreConfig::new(root.path()))
        .err()
        .unwrap();
    assert!(matches!(err, ImageError::CacheLocked { .. }), "{err}");
    drop(first);

    let second = ImageStore::open(ImageStoreConfig::new(root.path())).unwrap();
    assert_eq!(second.usage().layers, 1);
    assert_eq!(second.usage().pinned_layers, 1);
    assert!(levers9_image::is_mounted(&kept.path));
    let again = second.pull(&pushed.digest_ref).await.unwrap();
    assert_eq!(again, image);
    assert_eq!(second.blob_downloads(), 0);
    assert_eq!(second.manifest_fetches(), 0);
    let rootfs = second
        .prepare_rootfs(&again, &id("after-restart"))
        .await
        .unwrap();
    assert!(rootfs.path.join("etc/hello.txt").is_file());
    second.release(&id("after-restart")).await.unwrap();
    second.release(&id("kept")).await.unwrap();
    assert!(!levers9_image::is_mounted(&kept.path));
    assert_eq!(second.usage().pinned_layers, 0);
}

/// The size a layer takes in the cache, from its `.size` file.
fn cached_size(store: &ImageStore, d: &Digest) -> u64 {
    let p = store
        .root()
        .join("layers/sha256")
        .join(format!("{}.size", d.hex()));
    fs::read_to_string(p).unwrap().trim().parse().unwrap()
}

#[tokio::test]
async fn eviction_removes_least_recently_used_unused_layers_only() {
    // Three one-layer images of about the same size.
    let images: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            let b = ImageBuilder::new();
            b.write(&format!("data/{n}.txt"), &n.repeat(5000)).layer();
            b.push(&format!("evict-{n}"))
        })
        .collect();
    let (_measure_root, measure) = store(UNBOUNDED);
    let mut sizes = Vec::new();
    for p in &images {
        let img = measure.pull(&p.digest_ref).await.unwrap();
        sizes.push(cached_size(&measure, &img.layers[0].digest));
    }
    // Room for any two layers, not for three.
    let bound =
        sizes.iter().sum::<u64>() - sizes.iter().min().unwrap() + sizes.iter().max().unwrap() / 2;
    assert!(bound < sizes.iter().sum::<u64>());
    let (_root, store) = store(bound);

    let a = store.pull(&images[0].digest_ref).await.unwrap();
    let rootfs_a = store.prepare_rootfs(&a, &id("uses-a")).await.unwrap();
    let b = store.pull(&images[1].digest_ref).await.unwrap();
    let c = store.pull(&images[2].digest_ref).await.unwrap();
    let [la, lb, lc] = [&a, &b, &c].map(|i| i.layers[0].digest.clone());
    // a is the least recently used, but in use: b goes instead.
    assert!(
        store.has_layer(&la) && store.layer_dir(&la).is_dir(),
        "a layer in use was evicted"
    );
    assert!(
        !store.has_layer(&lb) && !store.layer_dir(&lb).exists(),
        "b should have been evicted"
    );
    assert!(!store.root().join("blobs/sha256").join(lb.hex()).exists());
    assert!(store.has_layer(&lc));
    assert!(store.usage().bytes <= bound);

    // Releasing a makes it the most recently used; pulling b again now
    // evicts c, the least recently used unused layer.
    store.release(&rootfs_a.container_id).await.unwrap();
    let downloads = store.blob_downloads();
    store.pull(&images[1].digest_ref).await.unwrap();
    assert_eq!(
        store.blob_downloads(),
        downloads + 1,
        "b's layer is downloaded again"
    );
    assert!(store.has_layer(&la));
    assert!(store.has_layer(&lb));
    assert!(!store.has_layer(&lc));
    assert!(store.usage().bytes <= bound);
}
