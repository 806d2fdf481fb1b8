//! Workspace secrets and the encryption key, end to end: values sealed at
//! rest and never shown, rotation across replicas and crashes, a missing
//! old key, the refuse flag.

mod common;

use std::time::Duration;

use base64::Engine;
use common::{text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::{CreateSecretRequest, DeleteSecretRequest, ListSecretsRequest};
use levers9_controlplane::sealing;
use levers9_seal::{Key, Keyring};
use levers9_store::{PostgresStore, SealedId, SealedKind, SealedStore, SqliteStore};
use tonic::Code;

const VALUE: &str = "s3cr3t-value-that-must-not-leak";

fn key_text(byte: u8) -> String {
    base64::engine::general_purpose::STANDARD.encode([byte; 32])
}

fn key(byte: u8) -> Key {
    Key::from_bytes([byte; 32])
}

fn with_key(mut env: Vec<(String, String)>, current: u8, previous: &[u8]) -> Vec<(String, String)> {
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    env.push(("LEVERS9_ENCRYPTION_KEY".into(), key_text(current)));
    let previous: Vec<String> = previous.iter().map(|b| key_text(*b)).collect();
    env.push((
        "LEVERS9_PREVIOUS_ENCRYPTION_KEYS".into(),
        previous.join(","),
    ));
    env
}

async fn secrets_are_sealed_listed_by_name_and_never_shown(backend: Backend) {
    let cp = Controlplane::start(backend);
    let admin = cp.admin_token().await;
    let home = tempfile::tempdir().expect("home");
    let port = cp.grpc_port.to_string();
    let env = [
        ("LEVERS9_TOKEN", admin.as_str()),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
        ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
    ];
    let stdin = format!("{VALUE}\n");
    let created = cp.cli(
        home.path(),
        &["secret", "create", "DB_PASSWORD"],
        &env,
        Some(&stdin),
    );
    assert!(created.status.success(), "{}", text(&created.stderr));
    let listed = cp.cli(home.path(), &["secret", "list"], &env, None);
    let listing = text(&listed.stdout);
    assert!(listing.contains("DB_PASSWORD"), "{listing}");
    assert!(!listing.contains(VALUE));

    let file = home.path().join("value.txt");
    std::fs::write(&file, "second-value").expect("write");
    let updated = cp.cli(
        home.path(),
        &[
            "secret",
            "update",
            "DB_PASSWORD",
            "--from-file",
            file.to_str().expect("utf8"),
        ],
        &env,
        None,
    );
    assert!(updated.status.success(), "{}", text(&updated.stderr));
    let missing = cp.cli(
        home.path(),
        &["secret", "update", "NOPE", "--value", "x"],
        &env,
        None,
    );
    assert!(
        text(&missing.stderr).contains("no secret \"NOPE\""),
        "{}",
        text(&missing.stderr)
    );
    let bad = cp.cli(home.path(), &["secret", "create", "1BAD"], &env, Some("x"));
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

    let deleted = cp.cli(
        home.path(),
        &["secret", "delete", "DB_PASSWORD"],
        &env,
        None,
    );
    assert!(deleted.status.success(), "{}", text(&deleted.stderr));
    let listing = text(&cp.cli(home.path(), &["secret", "list"], &env, None).stdout);
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

/// Seals `count` secrets of workspace `workspace_id` with `keyring`, the way
/// the controlplane does, straight into the store.
async fn seed(store: &dyn SealedStore, keyring: &Keyring, workspace_id: &str, count: usize) {
    let now = chrono::Utc::now();
    let writes = (0..count).map(|i| {
        let id = SealedId {
            kind: SealedKind::Secret,
            workspace_id: workspace_id.to_owned(),
            name: format!("S{i:05}"),
        };
        store.insert_sealed(sealing::sealed_value(
            keyring,
            id,
            format!("value-{i}").as_bytes(),
            now,
        ))
    });
    for chunk in writes.collect::<Vec<_>>().chunks_mut(64) {
        for result in futures::future::join_all(chunk.iter_mut()).await {
            result.expect("seed");
        }
    }
}

/// Every value opens with `keyring` (so nothing was lost) and reads back.
async fn assert_all_open(
    store: &dyn SealedStore,
    keyring: &Keyring,
    workspace_id: &str,
    count: usize,
) {
    for i in (0..count).step_by(97).chain([count - 1]) {
        let id = SealedId {
            kind: SealedKind::Secret,
            workspace_id: workspace_id.to_owned(),
            name: format!("S{i:05}"),
        };
        let value = store
            .get_sealed(&id)
            .await
            .expect("get")
            .expect("still there");
        let plain = sealing::open(keyring, &value).expect("opens");
        assert_eq!(plain, format!("value-{i}").as_bytes());
    }
}

fn field(line: &str, name: &str) -> String {
    line.split_whitespace()
        .find_map(|part| part.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name}= in {line}"))
        .to_owned()
}

/// Two replicas start at the same moment on the new key with the old one
/// listed: together they re-seal every one of 10,000 rows exactly once.
#[tokio::test]
async fn two_replicas_rotate_ten_thousand_rows_together() {
    const ROWS: usize = 10_000;
    let base = common::backend_env(Backend::Servers);
    let url = common::database_url(&base);
    let workspace_id = {
        let first = Controlplane::start_with(with_key(base.clone(), 1, &[]));
        first
            .bootstrap(SECRET)
            .await
            .expect("bootstrap")
            .workspace_id
    };
    let store = PostgresStore::connect(&url, 8).await.expect("store");
    seed(&store, &Keyring::new(key(1), vec![]), &workspace_id, ROWS).await;

    let mut one = Controlplane::spawn_with(with_key(base.clone(), 2, &[1]));
    let mut two = Controlplane::spawn_with(with_key(base, 2, &[1]));
    one.wait_healthy();
    two.wait_healthy();
    let mut resealed = 0;
    for cp in [&one, &two] {
        let line = cp
            .wait_for_log("encryption key rotation finished", Duration::from_secs(120))
            .await;
        assert_eq!(field(&line, "all_rows_on_current_key"), "true", "{line}");
        resealed += field(&line, "resealed").parse::<usize>().expect("count");
    }
    assert_eq!(resealed, ROWS, "each row re-sealed exactly once");
    let counts = store.count_sealed_by_key().await.expect("counts");
    assert_eq!(counts, vec![(key(2).id().to_string(), ROWS as u64)]);
    assert_all_open(&store, &Keyring::new(key(2), vec![]), &workspace_id, ROWS).await;
}

/// A controlplane killed (SIGKILL) half-way through a rotation loses
/// nothing, and the next start finishes it.
#[tokio::test]
async fn rotation_killed_half_way_finishes_at_the_next_start() {
    const ROWS: usize = 10_000;
    let base = common::backend_env(Backend::Servers);
    let url = common::database_url(&base);
    let workspace_id = {
        let first = Controlplane::start_with(with_key(base.clone(), 1, &[]));
        first
            .bootstrap(SECRET)
            .await
            .expect("bootstrap")
            .workspace_id
    };
    let store = PostgresStore::connect(&url, 8).await.expect("store");
    seed(&store, &Keyring::new(key(1), vec![]), &workspace_id, ROWS).await;

    let mut slow = with_key(base.clone(), 2, &[1]);
    slow.push(("LEVERS9_KEY_ROTATION_BATCH_SIZE".into(), "5".into()));
    let new_id = key(2).id().to_string();
    {
        let _victim = Controlplane::spawn_with(slow);
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let counts = store.count_sealed_by_key().await.expect("counts");
            let moved = counts
                .iter()
                .find(|(k, _)| *k == new_id)
                .map_or(0, |(_, n)| *n);
            if moved > 0 {
                assert!(moved < ROWS as u64, "rotation finished before the kill");
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "rotation never started"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Dropping kills it with SIGKILL, mid-rotation.
    }
    assert_all_open(
        &store,
        &Keyring::new(key(2), vec![key(1)]),
        &workspace_id,
        ROWS,
    )
    .await;

    let again = Controlplane::start_with(with_key(base, 2, &[1]));
    let line = again
        .wait_for_log("encryption key rotation finished", Duration::from_secs(120))
        .await;
    assert_eq!(field(&line, "all_rows_on_current_key"), "true", "{line}");
    assert_eq!(
        store.count_sealed_by_key().await.expect("counts"),
        vec![(new_id, ROWS as u64)]
    );
    assert_all_open(&store, &Keyring::new(key(2), vec![]), &workspace_id, ROWS).await;
}

/// The store a controlplane of this environment uses.
async fn open_store(
    backend: Backend,
    env: &[(String, String)],
    data_dir: &std::path::Path,
) -> Box<dyn SealedStore> {
    match backend {
        Backend::Servers => Box::new(
            PostgresStore::connect(&common::database_url(env), 4)
                .await
                .expect("pg"),
        ),
        Backend::Embedded => Box::new(
            SqliteStore::open(&data_dir.join("levers9.db"))
                .await
                .expect("sqlite"),
        ),
    }
}

/// Dropping the old key too early: the controlplane says which key is
/// missing, reports all_rows_on_current_key=false, and changes nothing.
async fn a_missing_old_key_is_named_and_nothing_is_lost(backend: Backend) {
    let data = tempfile::tempdir().expect("data");
    let mut base = common::backend_env(backend);
    base.push(("LEVERS9_DATA_DIR".into(), data.path().display().to_string()));
    let workspace_id = {
        let first = Controlplane::start_with(with_key(base.clone(), 1, &[]));
        first
            .bootstrap(SECRET)
            .await
            .expect("bootstrap")
            .workspace_id
    };
    let old = Keyring::new(key(1), vec![]);
    let before = {
        let store = open_store(backend, &base, data.path()).await;
        seed(store.as_ref(), &old, &workspace_id, 20).await;
        store
            .list_sealed(SealedKind::Secret, &workspace_id)
            .await
            .expect("list")
    };

    let cp = Controlplane::start_with(with_key(base.clone(), 2, &[]));
    let line = cp
        .wait_for_log("encryption key rotation finished", Duration::from_secs(30))
        .await;
    assert_eq!(field(&line, "all_rows_on_current_key"), "false", "{line}");
    assert_eq!(field(&line, "unknown_key"), "20", "{line}");
    let log = cp.log();
    assert!(
        log.lines()
            .any(|l| l.contains(key(1).id().as_str()) && l.contains("previousEncryptionKeys")),
        "the missing key id is named:\n{log}"
    );
    assert!(
        !log.contains(&key_text(1)) && !log.contains(&key_text(2)),
        "no key in the log"
    );
    drop(cp);

    let store = open_store(backend, &base, data.path()).await;
    let after = store
        .list_sealed(SealedKind::Secret, &workspace_id)
        .await
        .expect("list");
    assert_eq!(before, after, "nothing deleted or re-sealed");
    assert_all_open(store.as_ref(), &old, &workspace_id, 20).await;
}

async fn storage_credentials_are_sealed_and_the_secret_key_never_shown(backend: Backend) {
    const SECRET_KEY: &str = "wJalrXUtnFEMI-storage-secret-key";
    let cp = Controlplane::start(backend);
    let admin = cp.admin_token().await;
    let home = tempfile::tempdir().expect("home");
    let port = cp.grpc_port.to_string();
    let env = [
        ("LEVERS9_TOKEN", admin.as_str()),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
        ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
    ];
    let missing = cp.cli(home.path(), &["workspace", "storage", "show"], &env, None);
    assert!(
        text(&missing.stderr).contains("no storage credentials"),
        "{}",
        text(&missing.stderr)
    );
    let set = cp.cli(
        home.path(),
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
        &env,
        Some(SECRET_KEY),
    );
    assert!(set.status.success(), "{}", text(&set.stderr));
    let shown = cp.cli(home.path(), &["workspace", "storage", "show"], &env, None);
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
    let bad = cp.cli(
        home.path(),
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
        &env,
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
    let home = tempfile::tempdir().expect("home");
    let port = cp.grpc_port.to_string();
    let cli_env = [
        ("LEVERS9_TOKEN", admin.as_str()),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
        ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
    ];
    let image = common::fleet::busybox_image();
    let out = cp.cli(
        home.path(),
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
        &cli_env,
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

    let listed = cp.cli(home.path(), &["container", "list"], &cli_env, None);
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

    let missing = cp.cli(
        home.path(),
        &[
            "container",
            "run",
            "--secret",
            "NOT_THERE",
            &image,
            "--",
            "true",
        ],
        &cli_env,
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
    a_missing_old_key_is_named_and_nothing_is_lost,
);
