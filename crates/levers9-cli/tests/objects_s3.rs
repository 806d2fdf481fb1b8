//! The controlplane binary on S3-compatible workspace storage (SeaweedFS,
//! started by scripts/test-servers.sh): code objects go through the
//! FunctionService into the bucket, and bad keys stop the start with a
//! message that names the setting and not the key.

mod common;

use std::time::{Duration, Instant};

use common::{with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::function_service_client::FunctionServiceClient;
use levers9_api::v1::{GetObjectRequest, HeadObjectRequest, PutObjectRequest};
use tonic::Code;

/// Bytes standing in for a code zip, and their digest
/// (`printf 'PK\x03\x04 levers9 objects_s3 end-to-end zip' | sha256sum`).
const ZIP: &[u8] = b"PK\x03\x04 levers9 objects_s3 end-to-end zip";
const ZIP_DIGEST: &str = "sha256:1e0a8c45f306acf802101f3ab162d19ef4c184b9f4f1a5aef81357ad4653b8b3";

#[tokio::test]
async fn code_objects_go_to_the_bucket_through_the_controlplane() {
    let s3 = common::objects_bucket_env("through-the-controlplane");
    let secret = s3
        .iter()
        .find(|(k, _)| k == "LEVERS9_WORKSPACE_SECRET_ACCESS_KEY")
        .map(|(_, v)| v.clone())
        .expect("secret");
    let mut env = common::backend_env(Backend::Embedded);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    env.extend(s3);
    let cp = Controlplane::start_with(env);
    let token = cp.admin_token().await;
    let mut functions = FunctionServiceClient::new(cp.channel().await);
    let head = |digest: &str| {
        with_token(
            HeadObjectRequest {
                digest: digest.into(),
            },
            &token,
        )
    };

    let before = functions.head_object(head(ZIP_DIGEST)).await.expect("head");
    assert!(!before.into_inner().exists);
    functions
        .put_object(with_token(
            PutObjectRequest {
                digest: ZIP_DIGEST.into(),
                data: ZIP.to_vec(),
            },
            &token,
        ))
        .await
        .expect("put");
    let after = functions.head_object(head(ZIP_DIGEST)).await.expect("head");
    assert!(after.into_inner().exists);
    let got = functions
        .get_object(with_token(
            GetObjectRequest {
                digest: ZIP_DIGEST.into(),
                workspace_id: String::new(),
            },
            &token,
        ))
        .await
        .expect("get")
        .into_inner();
    assert_eq!(got.data, ZIP);

    let wrong = functions
        .put_object(with_token(
            PutObjectRequest {
                digest: format!("sha256:{}", "0".repeat(64)),
                data: ZIP.to_vec(),
            },
            &token,
        ))
        .await
        .expect_err("wrong digest");
    assert_eq!(wrong.code(), Code::InvalidArgument);

    let log = cp.log();
    assert!(log.contains("S3 bucket levers9-test"), "{log}");
    assert!(!log.contains(&secret), "the secret key is in the log");
    assert!(
        !cp.dir.path().join("data/objects").exists(),
        "nothing went to the local directory"
    );
}

#[tokio::test]
async fn wrong_s3_keys_stop_the_start_with_a_message_that_names_the_setting() {
    let mut env = common::objects_bucket_env("wrong-keys");
    let secret = "e2e-wrong-secret-access-key-0123456789";
    for (key, value) in &mut env {
        if key == "LEVERS9_WORKSPACE_SECRET_ACCESS_KEY" {
            *value = secret.into();
        }
    }
    let cp = Controlplane::spawn_with(env);
    let deadline = Instant::now() + Duration::from_secs(60);
    let log = loop {
        let log = cp.log();
        if log.contains("refused the keys") || Instant::now() > deadline {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        log.contains("refused the keys for bucket levers9-test"),
        "{log}"
    );
    assert!(
        log.contains("check storage.workspace.accessKeyId and storage.workspace.secretAccessKey"),
        "{log}"
    );
    assert!(
        !log.contains(secret),
        "the secret key is in the log:\n{log}"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", cp.grpc_port)).is_err(),
        "it does not serve"
    );
}
