use std::collections::HashMap;
use std::io::Write;

use crate::{load, to_yaml};

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn file_with(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(text.as_bytes()).expect("write");
    file
}

const S3_FILE: &str = "storage:\n  workspace:\n    endpoint: http://127.0.0.1:8333\n    \
    bucket: code\n    prefix: /team//objects\n    pathStyle: false\n    \
    accessKeyId: AKIDFILE\n    secretAccessKey: file-secret-value\n";

#[test]
fn workspace_storage_defaults_to_the_local_directory() {
    let (config, _) = load(None, &no_env).expect("defaults load");
    let workspace = &config.storage.workspace;
    assert!(!workspace.is_s3());
    assert_eq!(workspace.region, "us-east-1");
    assert_eq!(workspace.prefix, "objects/");
    assert_eq!(workspace.normalized_prefix(), "objects/");
    assert!(workspace.path_style);
}

#[test]
fn workspace_storage_loads_from_the_file() {
    let file = file_with(S3_FILE);
    let (config, _) = load(Some(file.path()), &no_env).expect("loads");
    let workspace = &config.storage.workspace;
    assert!(workspace.is_s3());
    assert_eq!(workspace.endpoint, "http://127.0.0.1:8333");
    assert_eq!(workspace.bucket, "code");
    assert_eq!(workspace.region, "us-east-1", "kept its default");
    assert!(!workspace.path_style);
    assert_eq!(workspace.normalized_prefix(), "team/objects/");
    assert_eq!(workspace.access_key_id.expose(), "AKIDFILE");
    assert_eq!(workspace.secret_access_key.expose(), "file-secret-value");
}

#[test]
fn workspace_storage_environment_beats_the_file() {
    let file = file_with(S3_FILE);
    let env = env_of(&[
        ("LEVERS9_WORKSPACE_S3_ENDPOINT", "https://s3.example.com"),
        ("LEVERS9_WORKSPACE_BUCKET", "other"),
        ("LEVERS9_WORKSPACE_S3_REGION", "eu-west-1"),
        ("LEVERS9_WORKSPACE_S3_PATH_STYLE", "true"),
        ("LEVERS9_WORKSPACE_ACCESS_KEY_ID", "AKIDENV"),
        // Digits stay a string: a secret is never turned into a number.
        ("LEVERS9_WORKSPACE_SECRET_ACCESS_KEY", "0123456789"),
    ]);
    let (config, _) = load(Some(file.path()), &env).expect("loads");
    let workspace = &config.storage.workspace;
    assert_eq!(workspace.endpoint, "https://s3.example.com");
    assert_eq!(workspace.bucket, "other");
    assert_eq!(workspace.region, "eu-west-1");
    assert!(workspace.path_style);
    assert_eq!(workspace.access_key_id.expose(), "AKIDENV");
    assert_eq!(workspace.secret_access_key.expose(), "0123456789");
}

#[test]
fn workspace_keys_never_print() {
    let file = file_with(S3_FILE);
    let (config, _) = load(Some(file.path()), &no_env).expect("loads");
    let debug = format!("{config:?}");
    let printed = to_yaml(&config.redacted()).expect("yaml");
    for text in [&debug, &printed] {
        assert!(!text.contains("file-secret-value"), "{text}");
        assert!(!text.contains("AKIDFILE"), "{text}");
    }
    assert!(printed.contains("secretAccessKey: <redacted>"), "{printed}");
    assert!(printed.contains("bucket: code"), "{printed}");
}

#[test]
fn a_bucket_without_keys_is_refused_naming_the_variables() {
    let file = file_with("storage:\n  workspace:\n    bucket: code\n");
    let text = load(Some(file.path()), &no_env)
        .expect_err("no keys")
        .to_string();
    assert!(text.contains("storage.workspace.accessKeyId"), "{text}");
    assert!(
        text.contains("LEVERS9_WORKSPACE_SECRET_ACCESS_KEY"),
        "{text}"
    );
}

#[test]
fn an_endpoint_without_a_scheme_is_refused() {
    let env = env_of(&[
        ("LEVERS9_WORKSPACE_BUCKET", "code"),
        ("LEVERS9_WORKSPACE_S3_ENDPOINT", "127.0.0.1:8333"),
        ("LEVERS9_WORKSPACE_ACCESS_KEY_ID", "a"),
        ("LEVERS9_WORKSPACE_SECRET_ACCESS_KEY", "b"),
    ]);
    let text = load(None, &env).expect_err("no scheme").to_string();
    assert!(text.contains("storage.workspace.endpoint"), "{text}");
    assert!(text.contains("http://"), "{text}");
}

#[test]
fn unknown_workspace_storage_keys_are_refused() {
    let file = file_with("storage:\n  workspace:\n    bucketName: code\n");
    let text = load(Some(file.path()), &no_env)
        .expect_err("unknown key")
        .to_string();
    assert!(text.contains("storage.workspace"), "{text}");
    assert!(text.contains("bucketName"), "{text}");
}
