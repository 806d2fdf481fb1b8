//! Workspace objects in a real S3-compatible server (SeaweedFS, started by
//! scripts/test-servers.sh). Each test works under a prefix of its own, so
//! they run side by side in one bucket. Skipped, saying so, only when
//! LEVERS9_TEST_S3_ENDPOINT is unset.

use futures::TryStreamExt;
use levers9_config::{Config, Secret, WorkspaceStorageConfig};
use levers9_controlplane::error::ApiError;
use levers9_controlplane::functions::objects::{
    ObjectBackend, ObjectStorage, ObjectStorageError, S3Objects,
};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use sha2::{Digest, Sha256};

/// The test server's bucket under a fresh prefix, or `None` (after saying
/// so) when no server is given.
fn s3_config(test: &str) -> Option<WorkspaceStorageConfig> {
    let Ok(endpoint) = std::env::var("LEVERS9_TEST_S3_ENDPOINT") else {
        eprintln!(
            "skipped {test}: LEVERS9_TEST_S3_ENDPOINT is unset (run it with scripts/test-servers.sh)"
        );
        return None;
    };
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!("LEVERS9_TEST_S3_ENDPOINT is set but {name} is not: scripts/test-servers.sh sets both")
        })
    };
    Some(WorkspaceStorageConfig {
        endpoint,
        bucket: var("LEVERS9_TEST_S3_BUCKET"),
        prefix: format!("tests/{test}-{}/", uuid::Uuid::new_v4().simple()),
        access_key_id: Secret::new(var("LEVERS9_TEST_S3_ACCESS_KEY_ID")),
        secret_access_key: Secret::new(var("LEVERS9_TEST_S3_SECRET_ACCESS_KEY")),
        ..WorkspaceStorageConfig::default()
    })
}

async fn storage(config: &WorkspaceStorageConfig) -> ObjectStorage {
    let mut whole = Config::default();
    whole.storage.workspace = config.clone();
    ObjectStorage::open(&whole)
        .await
        .expect("the test bucket opens")
}

/// Every key under the config's prefix, read with a client of its own.
async fn keys_under_prefix(config: &WorkspaceStorageConfig) -> Vec<String> {
    let raw = AmazonS3Builder::new()
        .with_endpoint(&config.endpoint)
        .with_allow_http(true)
        .with_region(&config.region)
        .with_bucket_name(&config.bucket)
        .with_access_key_id(config.access_key_id.expose())
        .with_secret_access_key(config.secret_access_key.expose())
        .build()
        .expect("a raw client");
    let prefix = Path::from(config.prefix.as_str());
    raw.list(Some(&prefix))
        .map_ok(|meta| meta.location.to_string())
        .try_collect()
        .await
        .expect("the prefix lists")
}

fn digest_of(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

#[tokio::test]
async fn put_then_head_and_get_round_trip() {
    let Some(config) = s3_config("round-trip") else {
        return;
    };
    let storage = storage(&config).await;
    assert!(storage.location().contains(&config.bucket));
    let data = b"PK\x03\x04 a code zip";
    let digest = digest_of(data);
    assert!(!storage.exists(&digest).await.unwrap(), "not there before");
    assert!(matches!(
        storage.get(&digest).await.map_err(ApiError::from),
        Err(ApiError::NotFound(_))
    ));
    storage.put(&digest, data).await.expect("put");
    assert!(storage.exists(&digest).await.unwrap());
    assert_eq!(storage.get(&digest).await.unwrap(), data);
    let hex = digest.trim_start_matches("sha256:");
    assert_eq!(
        keys_under_prefix(&config).await,
        vec![format!("{}sha256/{hex}", config.prefix)],
        "addressed by digest under the prefix"
    );
}

#[tokio::test]
async fn a_wrong_digest_is_refused_and_leaves_nothing() {
    let Some(config) = s3_config("wrong-digest") else {
        return;
    };
    let storage = storage(&config).await;
    let data = vec![7u8; 64 * 1024];
    let wrong = digest_of(b"other bytes");
    let error = ApiError::from(storage.put(&wrong, &data).await.expect_err("refused"));
    assert!(
        matches!(&error, ApiError::InvalidArgument(m) if m.contains("upload again")),
        "{error:?}"
    );
    assert!(!storage.exists(&wrong).await.unwrap());
    assert!(!storage.exists(&digest_of(&data)).await.unwrap());
    assert_eq!(keys_under_prefix(&config).await, Vec::<String>::new());
}

#[tokio::test]
async fn a_second_put_of_the_same_digest_is_idempotent() {
    let Some(config) = s3_config("idempotent") else {
        return;
    };
    let storage = storage(&config).await;
    let backend = S3Objects::new(&config).unwrap();
    let data = b"import levers9\n";
    let digest = digest_of(data);
    storage.put(&digest, data).await.expect("first put");
    let raw = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(&config.endpoint)
        .with_allow_http(true)
        .with_bucket_name(&config.bucket)
        .with_access_key_id(config.access_key_id.expose())
        .with_secret_access_key(config.secret_access_key.expose())
        .build()
        .unwrap();
    let key = Path::from(format!(
        "{}sha256/{}",
        config.prefix,
        digest.trim_start_matches("sha256:")
    ));
    raw.head(&key).await.expect("stored under its digest");
    // Mark the stored object: a second upload would replace the mark.
    raw.put(&key, b"marker"[..].into()).await.unwrap();
    storage.put(&digest, data).await.expect("second put");
    let after = raw.get(&key).await.unwrap().bytes().await.unwrap();
    assert_eq!(&after[..], b"marker", "the second put uploads nothing");
    assert_eq!(keys_under_prefix(&config).await.len(), 1);
    assert!(backend
        .exists(digest.trim_start_matches("sha256:"))
        .await
        .unwrap());
}

#[tokio::test]
async fn a_20_mb_object_round_trips() {
    let Some(config) = s3_config("large") else {
        return;
    };
    let storage = storage(&config).await;
    // Not one repeated byte: a pattern a truncation or reordering would break.
    let data: Vec<u8> = (0..20 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let digest = digest_of(&data);
    storage.put(&digest, &data).await.expect("put 20 MB");
    let back = storage.get(&digest).await.expect("get 20 MB");
    assert_eq!(back.len(), data.len());
    assert_eq!(digest_of(&back), digest);
}

#[tokio::test]
async fn wrong_keys_are_a_clear_error_without_the_secret() {
    let Some(mut config) = s3_config("wrong-keys") else {
        return;
    };
    let secret = "not-the-right-secret-0123456789";
    config.secret_access_key = Secret::new(secret);
    let mut whole = Config::default();
    whole.storage.workspace = config.clone();
    let error = ObjectStorage::open(&whole).await.expect_err("keys refused");
    assert!(
        matches!(error, ObjectStorageError::Refused { .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "the object storage at {} refused the keys for bucket {}",
            config.endpoint, config.bucket
        )),
        "{text}"
    );
    assert!(
        text.ends_with("check storage.workspace.accessKeyId and storage.workspace.secretAccessKey"),
        "{text}"
    );
    assert!(!text.contains(secret), "{text}");
    assert!(!format!("{error:?}").contains(secret));
    eprintln!("what the operator reads: {text}");

    // The same on an upload, and the caller sees only "try again".
    let backend = S3Objects::new(&config).unwrap();
    let put = backend
        .put(&"0".repeat(64), b"x")
        .await
        .expect_err("refused");
    assert!(!put.to_string().contains(secret), "{put}");
    let status = tonic::Status::from(ApiError::from(put));
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert!(!status.message().contains(secret));
}

#[tokio::test]
async fn a_missing_bucket_is_named() {
    let Some(mut config) = s3_config("no-bucket") else {
        return;
    };
    config.bucket = format!("levers9-missing-{}", uuid::Uuid::new_v4().simple());
    let error = S3Objects::new(&config)
        .unwrap()
        .check()
        .await
        .expect_err("no bucket");
    let text = error.to_string();
    assert!(
        text.contains(&format!("the bucket {} does not exist", config.bucket)),
        "{text}"
    );
    assert!(text.contains("storage.workspace.bucket"), "{text}");
}
