use sha2::{Digest, Sha256};

use super::*;

fn digest_of(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

#[tokio::test]
async fn stores_by_digest_and_refuses_wrong_ones() {
    let dir = tempfile::tempdir().unwrap();
    let storage = ObjectStorage::new(dir.path());
    let data = b"print('hi')";
    let digest = digest_of(data);
    assert!(!storage.exists(&digest).await.unwrap());
    storage.put(&digest, data).await.unwrap();
    storage.put(&digest, data).await.unwrap();
    assert_eq!(storage.get(&digest).await.unwrap(), data);
    let wrong = format!("sha256:{}", "0".repeat(64));
    assert!(storage.put(&wrong, data).await.is_err());
    assert!(matches!(
        storage.get(&wrong).await,
        Err(FunctionError::ObjectNotFound(_))
    ));
    assert!(storage.get("sha256:../../etc/passwd").await.is_err());
}

#[tokio::test]
async fn a_wrong_digest_leaves_nothing_in_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let storage = ObjectStorage::new(dir.path());
    let wrong = format!("sha256:{}", "a".repeat(64));
    let error = storage.put(&wrong, b"other bytes").await.unwrap_err();
    assert!(error.to_string().contains("upload again"), "{error}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn the_embedded_default_is_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.controlplane.data_dir = dir.path().display().to_string();
    let storage = ObjectStorage::open(&config).await.unwrap();
    assert!(
        storage.location().ends_with("/objects"),
        "{}",
        storage.location()
    );
    let data = b"zip bytes";
    storage.put(&digest_of(data), data).await.unwrap();
    assert!(dir
        .path()
        .join("objects/sha256")
        .join(hex::encode(Sha256::digest(data)))
        .exists());
}

#[tokio::test]
async fn an_unwritable_directory_names_the_setting_to_check() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the directory should be.
    let blocked = dir.path().join("objects");
    std::fs::write(&blocked, b"").unwrap();
    let storage = ObjectStorage::new(&blocked);
    let data = b"x";
    let error = storage.put(&digest_of(data), data).await.unwrap_err();
    let FunctionError::Objects(error) = error else {
        panic!("expected an object storage error, got {error:?}");
    };
    let text = error.to_string();
    assert!(text.contains("controlplane.dataDir"), "{text}");
}
