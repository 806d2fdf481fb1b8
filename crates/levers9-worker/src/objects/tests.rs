use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;

use super::{ObjectCache, ObjectError, ObjectSource};

/// Serves fixed objects by digest and counts fetches; the delay lets
/// concurrent callers overlap.
#[derive(Default)]
pub(crate) struct FakeSource {
    objects: HashMap<String, Vec<u8>>,
    fetches: AtomicUsize,
    delay: Duration,
}

#[async_trait]
impl ObjectSource for FakeSource {
    async fn fetch(&self, _workspace_id: &str, digest: &str) -> Result<Vec<u8>, String> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        self.objects
            .get(digest)
            .cloned()
            .ok_or_else(|| format!("object {digest} not found"))
    }
}

pub(crate) fn digest_of(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

/// A zip of `(name, content, unix mode)` files.
pub(crate) fn zip_of(files: &[(&str, &str, u32)]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, content, mode) in files {
        let options = SimpleFileOptions::default().unix_permissions(*mode);
        zip.start_file(*name, options).unwrap();
        zip.write_all(content.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn cache_with(dir: &tempfile::TempDir, source: FakeSource) -> (ObjectCache, Arc<FakeSource>) {
    let source = Arc::new(source);
    let cache = ObjectCache::open(dir.path().join("objects"), source.clone()).unwrap();
    (cache, source)
}

pub(crate) fn source_of(objects: &[(&str, Vec<u8>)]) -> FakeSource {
    FakeSource {
        objects: objects
            .iter()
            .map(|(d, data)| (d.to_string(), data.clone()))
            .collect(),
        ..FakeSource::default()
    }
}

#[tokio::test]
async fn a_zip_is_unpacked_with_its_content_and_executable_bits() {
    let zip = zip_of(&[
        ("app/main.py", "print('hi')\n", 0o644),
        ("bin/run", "#!/bin/sh\n", 0o755),
    ]);
    let digest = digest_of(&zip);
    let dir = tempfile::tempdir().unwrap();
    let (cache, _) = cache_with(&dir, source_of(&[(&digest, zip)]));

    let path = cache.unpacked("ws", &digest).await.unwrap();

    assert_eq!(
        std::fs::read_to_string(path.join("app/main.py")).unwrap(),
        "print('hi')\n"
    );
    let mode = |p: &str| {
        std::fs::metadata(path.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("bin/run"), 0o755);
    assert_eq!(mode("app/main.py"), 0o644);
    assert!(path.ends_with(digest.strip_prefix("sha256:").unwrap()));
}

#[tokio::test]
async fn a_second_call_does_not_fetch_again() {
    let zip = zip_of(&[("a.py", "x = 1\n", 0o644)]);
    let digest = digest_of(&zip);
    let dir = tempfile::tempdir().unwrap();
    let (cache, source) = cache_with(&dir, source_of(&[(&digest, zip.clone())]));

    let first = cache.unpacked("ws", &digest).await.unwrap();
    let second = cache.unpacked("ws", &digest).await.unwrap();
    assert_eq!(first, second);
    let blob = cache.file("ws", &digest).await.unwrap();
    assert_eq!(std::fs::read(&blob).unwrap(), zip);
    cache.file("ws", &digest).await.unwrap();

    // One fetch for the unpacked tree, one for the blob.
    assert_eq!(source.fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn concurrent_callers_wait_for_one_fetch() {
    let zip = zip_of(&[("a.py", "x = 1\n", 0o644)]);
    let digest = digest_of(&zip);
    let dir = tempfile::tempdir().unwrap();
    let source = FakeSource {
        delay: Duration::from_millis(100),
        ..source_of(&[(&digest, zip)])
    };
    let (cache, source) = cache_with(&dir, source);

    let calls = (0..8).map(|_| cache.unpacked("ws", &digest));
    for result in futures::future::join_all(calls).await {
        result.unwrap();
    }

    assert_eq!(source.fetches.load(Ordering::SeqCst), 1);
    assert!(cache.in_flight.lock().is_empty());
}

#[tokio::test]
async fn data_that_does_not_match_its_digest_is_refused() {
    let zip = zip_of(&[("a.py", "x = 1\n", 0o644)]);
    let claimed = digest_of(b"something else");
    let dir = tempfile::tempdir().unwrap();
    let (cache, _) = cache_with(&dir, source_of(&[(&claimed, zip)]));

    let error = cache.unpacked("ws", &claimed).await.unwrap_err();
    assert!(matches!(error, ObjectError::Mismatch { .. }), "{error}");
    assert!(error.to_string().contains("does not match the digest"));
    let error = cache.file("ws", &claimed).await.unwrap_err();
    assert!(matches!(error, ObjectError::Mismatch { .. }), "{error}");
    assert_eq!(
        std::fs::read_dir(dir.path().join("objects/unpacked"))
            .unwrap()
            .count(),
        0
    );
}

#[tokio::test]
async fn entries_escaping_the_directory_are_refused() {
    for name in ["../evil.py", "a/../../evil.py", "/etc/evil.py"] {
        let zip = zip_of(&[("ok.py", "", 0o644), (name, "boom", 0o644)]);
        let digest = digest_of(&zip);
        let dir = tempfile::tempdir().unwrap();
        let (cache, _) = cache_with(&dir, source_of(&[(&digest, zip)]));

        let error = cache.unpacked("ws", &digest).await.unwrap_err();
        assert!(matches!(error, ObjectError::Escapes(_)), "{name}: {error}");
        assert!(error.to_string().contains("points outside its directory"));
        // Nothing half-unpacked is left where the cache would trust it.
        assert_eq!(
            std::fs::read_dir(dir.path().join("objects/unpacked"))
                .unwrap()
                .count(),
            0
        );
        assert!(!dir.path().join("evil.py").exists());
        assert!(!dir.path().join("objects/evil.py").exists());
    }
}

#[tokio::test]
async fn symbolic_links_are_refused() {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.add_symlink("passwd", "/etc/passwd", SimpleFileOptions::default())
        .unwrap();
    let zip = zip.finish().unwrap().into_inner();
    let digest = digest_of(&zip);
    let dir = tempfile::tempdir().unwrap();
    let (cache, _) = cache_with(&dir, source_of(&[(&digest, zip)]));

    let error = cache.unpacked("ws", &digest).await.unwrap_err();
    assert!(matches!(error, ObjectError::Symlink(_)), "{error}");
}

#[tokio::test]
async fn a_bad_digest_is_refused_before_fetching() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, source) = cache_with(&dir, FakeSource::default());
    for digest in ["sha256:../../etc", "md5:abc", "sha256:"] {
        let error = cache.unpacked("ws", digest).await.unwrap_err();
        assert!(matches!(error, ObjectError::BadDigest(_)), "{error}");
    }
    assert_eq!(source.fetches.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_fetch_failure_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, _) = cache_with(&dir, FakeSource::default());
    let digest = digest_of(b"missing");
    let error = cache.file("ws", &digest).await.unwrap_err();
    assert_eq!(error.to_string(), format!("object {digest} not found"));
}

#[test]
fn opening_clears_leftover_staging() {
    let dir = tempfile::tempdir().unwrap();
    let leftover = dir.path().join("objects/tmp/half.1234");
    std::fs::create_dir_all(&leftover).unwrap();
    ObjectCache::open(dir.path().join("objects"), Arc::new(FakeSource::default())).unwrap();
    assert!(!leftover.exists());
}
