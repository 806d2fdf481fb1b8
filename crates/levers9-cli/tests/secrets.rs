//! Workspace secrets and storage credentials, end to end: sealed at rest,
//! never shown, handed to containers and to nothing else.

mod common;

use common::{text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::{CreateSecretRequest, DeleteSecretRequest, ListSecretsRequest};
use tonic::Code;

const VALUE: &str = "s3cr3t-value-that-must-not-leak";

async fn secrets_are_sealed_listed_by_name_and_never_shown(backend: Backend) {
    let cp = Controlplane::start(backend);
    let admin = cp.admin_token().await;
    let home = tempfile::tempdir().expect("home");
    let stdin = format!("{VALUE}\n");
    let created = cp.cli_as(&admin, &["secret", "create", "DB_PASSWORD"], Some(&stdin));
    assert!(created.status.success(), "{}", text(&created.stderr));
    let listed = cp.cli_as(&admin, &["secret", "list"], None);
    let listing = text(&listed.stdout);
    assert!(listing.contains("DB_PASSWORD"), "{listing}");
    assert!(!listing.contains(VALUE));

    let file = home.path().join("value.txt");
    std::fs::write(&file, "second-value").expect("write");
    let updated = cp.cli_as(
        &admin,
        &[
            "secret",
            "update",
            "DB_PASSWORD",
            "--from-file",
            file.to_str().expect("utf8"),
        ],
        None,
    );
    assert!(updated.status.success(), "{}", text(&updated.stderr));
    let missing = cp.cli_as(&admin, &["secret", "update", "NOPE", "--value", "x"], None);
    assert!(
        text(&missing.stderr).contains("no secret \"NOPE\""),
        "{}",
        text(&missing.stderr)
    );
    let bad = cp.cli_as(&admin, &["secret", "create", "1BAD"], Some("x"));
    assert!(
        text(&bad.stderr).contains("environment variable"),
        "{}",
        text(&bad.stderr)
    );

    let rest: serde_json::Value = reqwest::Client::new()
        .get(cp.http("/api/v1/controlplane/secrets"))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("GET secrets")
        .json()
        .await
        .expect("json");
    assert_eq!(rest["secrets"][0]["name"], "DB_PASSWORD");
    assert!(!rest.to_string().contains("second-value"));

    // Nowhere at rest, in the log or in the process's own entries.
    if backend == Backend::Embedded {
        for entry in std::fs::read_dir(cp.dir.path().join("data")).expect("data dir") {
            let bytes = std::fs::read(entry.expect("entry").path()).expect("read");
            for value in [VALUE, "second-value"] {
                assert!(
                    !bytes.windows(value.len()).any(|w| w == value.as_bytes()),
                    "plaintext in the database files"
                );
            }
        }
    }
    let log = cp.log();
    for place in [
        log,
        std::fs::read_to_string(format!("/proc/{}/cmdline", cp.pid())).unwrap_or_default(),
        String::from_utf8_lossy(
            &std::fs::read(format!("/proc/{}/environ", cp.pid())).unwrap_or_default(),
        )
        .into_owned(),
    ] {
        assert!(!place.contains(VALUE) && !place.contains("second-value"));
    }

    let deleted = cp.cli_as(&admin, &["secret", "delete", "DB_PASSWORD"], None);
    assert!(deleted.status.success(), "{}", text(&deleted.stderr));
    let listing = text(&cp.cli_as(&admin, &["secret", "list"], None).stdout);
    assert!(!listing.contains("DB_PASSWORD"), "{listing}");
}

async fn secrets_of_one_workspace_are_invisible_to_another(backend: Backend) {
    let cp = Controlplane::start(backend);
    let admin_a = cp.admin_token().await;
    let admin_b = cp
        .workspaces()
        .await
        .create_workspace(with_token(
            levers9_api::v1::CreateWorkspaceRequest {
                name: "team-b".into(),
            },
            &admin_a,
        ))
        .await
        .expect("workspace b")
        .into_inner()
        .admin_token;
    cp.secrets()
        .await
        .create_secret(with_token(
            CreateSecretRequest {
                name: "A_ONLY".into(),
                value: VALUE.into(),
            },
            &admin_a,
        ))
        .await
        .expect("create");
    let seen_by_b = cp
        .secrets()
        .await
        .list_secrets(with_token(ListSecretsRequest {}, &admin_b))
        .await
        .expect("list")
        .into_inner()
        .secrets;
    assert!(seen_by_b.is_empty());
    let denied = cp
        .secrets()
        .await
        .delete_secret(with_token(
            DeleteSecretRequest {
                name: "A_ONLY".into(),
            },
            &admin_b,
        ))
        .await
        .expect_err("b cannot delete a's secret");
    assert_eq!(denied.code(), Code::NotFound);
}

async fn storage_credentials_are_sealed_and_the_secret_key_never_shown(backend: Backend) {
    const SECRET_KEY: &str = "wJalrXUtnFEMI-storage-secret-key";
    let cp = Controlplane::start(backend);
    let admin = cp.admin_token().await;
    let missing = cp.cli_as(&admin, &["workspace", "storage", "show"], None);
    assert!(
        text(&missing.stderr).contains("no storage credentials"),
        "{}",
        text(&missing.stderr)
    );
    let set = cp.cli_as(
        &admin,
        &[
            "workspace",
            "storage",
            "set",
            "--endpoint",
            "http://127.0.0.1:8333",
            "--bucket",
            "levers9",
            "--access-key-id",
            "AKIDEXAMPLE",
        ],
        Some(SECRET_KEY),
    );
    assert!(set.status.success(), "{}", text(&set.stderr));
    let shown = cp.cli_as(&admin, &["workspace", "storage", "show"], None);
    let shown = text(&shown.stdout);
    assert!(
        shown.contains("bucket: levers9") && shown.contains("AKIDEXAMPLE"),
        "{shown}"
    );
    assert!(!shown.contains(SECRET_KEY), "{shown}");
    let rest = reqwest::Client::new()
        .get(cp.http("/api/v1/controlplane/workspace/storage"))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("GET storage")
        .text()
        .await
        .expect("body");
    assert!(
        rest.contains("AKIDEXAMPLE") && !rest.contains(SECRET_KEY),
        "{rest}"
    );
    assert!(!cp.log().contains(SECRET_KEY));
    if backend == Backend::Embedded {
        for entry in std::fs::read_dir(cp.dir.path().join("data")).expect("data dir") {
            let bytes = std::fs::read(entry.expect("entry").path()).expect("read");
            assert!(!bytes
                .windows(SECRET_KEY.len())
                .any(|w| w == SECRET_KEY.as_bytes()));
        }
    }
    let bad = cp.cli_as(
        &admin,
        &[
            "workspace",
            "storage",
            "set",
            "--endpoint",
            "s3.example.com",
            "--bucket",
            "b",
            "--access-key-id",
            "a",
        ],
        Some("k"),
    );
    assert!(
        text(&bad.stderr).contains("must start with https://"),
        "{}",
        text(&bad.stderr)
    );
}

/// Everything the hot state holds, as text: every key with its value.
fn redis_contents(prefix: &str) -> String {
    let url = std::env::var("LEVERS9_TEST_REDIS_URL").expect("redis url");
    let cli = |args: &[&str]| {
        let out = std::process::Command::new("redis-cli")
            .args(["-u", &url])
            .args(args)
            .output()
            .expect("redis-cli");
        text(&out.stdout)
    };
    let mut all = String::new();
    for key in cli(&["--scan", "--pattern", &format!("{prefix}*")]).lines() {
        let value = match cli(&["TYPE", key]).trim() {
            "string" => cli(&["GET", key]),
            "list" => cli(&["LRANGE", key, "0", "-1"]),
            "hash" => cli(&["HGETALL", key]),
            "set" => cli(&["SMEMBERS", key]),
            other => format!("<{other}>"),
        };
        all.push_str(key);
        all.push_str(&value);
    }
    all
}

fn proc_entries(pid: u32) -> String {
    let read = |what: &str| {
        String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default())
            .into_owned()
    };
    read("cmdline") + &read("environ")
}

/// A secret named by a container reaches that container's environment, and
/// appears nowhere else: not in the logs, the processes' command lines or
/// environments, the container record, or the stored state.
async fn a_secret_reaches_the_container_and_nowhere_else(backend: Backend) {
    const VALUE: &str = "pg-pass-9f3b2e1d";
    let mut env = common::backend_env(backend);
    let prefix = env
        .iter()
        .find(|(k, _)| k == "LEVERS9_REDIS_KEY_PREFIX")
        .map(|(_, v)| v.clone());
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    let cp = Controlplane::start_with(env);
    let admin = cp.admin_token().await;
    let worker = common::fleet::Worker::start(&cp, &admin, "default", "runc").await;
    cp.secrets()
        .await
        .create_secret(with_token(
            CreateSecretRequest {
                name: "DB_PASSWORD".into(),
                value: VALUE.into(),
            },
            &admin,
        ))
        .await
        .expect("create secret");
    let image = common::fleet::busybox_image();
    let out = cp.cli_as(
        &admin,
        &[
            "container",
            "run",
            "--secret",
            "DB_PASSWORD",
            &image,
            "--",
            "sh",
            "-c",
            "printf %s \"$DB_PASSWORD\" | md5sum",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let expected = std::process::Command::new("sh")
        .args(["-c", &format!("printf %s '{VALUE}' | md5sum")])
        .output()
        .expect("md5sum");
    assert_eq!(
        text(&out.stdout),
        text(&expected.stdout),
        "the container saw the value"
    );

    let listed = cp.cli_as(&admin, &["container", "list"], None);
    let mut places = vec![
        ("controlplane log", cp.log()),
        ("worker log", worker.log()),
        ("controlplane process", proc_entries(cp.pid())),
        (
            "worker process",
            proc_entries(worker.pid().expect("running")),
        ),
        ("container list", text(&listed.stdout)),
    ];
    match prefix {
        Some(prefix) => places.push(("redis", redis_contents(&prefix))),
        None => {
            for entry in std::fs::read_dir(cp.dir.path().join("data")).expect("data dir") {
                let bytes = std::fs::read(entry.expect("entry").path()).expect("read");
                places.push((
                    "database files",
                    String::from_utf8_lossy(&bytes).into_owned(),
                ));
            }
        }
    }
    for (place, contents) in places {
        assert!(!contents.contains(VALUE), "the secret shows in the {place}");
    }

    let missing = cp.cli_as(
        &admin,
        &[
            "container",
            "run",
            "--secret",
            "NOT_THERE",
            &image,
            "--",
            "true",
        ],
        None,
    );
    assert!(
        text(&missing.stderr).contains("no secret \"NOT_THERE\""),
        "{}",
        text(&missing.stderr)
    );
}

on_both_backends!(
    a_secret_reaches_the_container_and_nowhere_else,
    storage_credentials_are_sealed_and_the_secret_key_never_shown,
    secrets_are_sealed_listed_by_name_and_never_shown,
    secrets_of_one_workspace_are_invisible_to_another,
);
