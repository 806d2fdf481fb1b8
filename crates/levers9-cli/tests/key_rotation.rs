//! Rotating the encryption key, end to end: replicas starting together, a
//! crash half-way, an old key dropped too early.

mod common;

use std::time::Duration;

use base64::Engine;
use common::{Backend, Controlplane, SECRET};
use levers9_controlplane::sealing;
use levers9_seal::{Key, Keyring};
use levers9_store::{PostgresStore, SealedId, SealedKind, SealedStore, SqliteStore};

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

const ROWS: usize = 10_000;

/// A Postgres install bootstrapped on key 1, with [`ROWS`] secrets sealed
/// with it: its environment, its store and its workspace.
async fn sealed_with_key_one() -> (Vec<(String, String)>, PostgresStore, String) {
    let base = common::backend_env(Backend::Servers);
    let workspace_id = {
        let first = Controlplane::start_with(with_key(base.clone(), 1, &[]));
        first
            .bootstrap(SECRET)
            .await
            .expect("bootstrap")
            .workspace_id
    };
    let store = PostgresStore::connect(&common::database_url(&base), 8)
        .await
        .expect("store");
    seed(&store, &Keyring::new(key(1), vec![]), &workspace_id, ROWS).await;
    (base, store, workspace_id)
}

/// Two replicas start at the same moment on the new key with the old one
/// listed: together they re-seal every one of 10,000 rows exactly once.
#[tokio::test]
async fn two_replicas_rotate_ten_thousand_rows_together() {
    let (base, store, workspace_id) = sealed_with_key_one().await;

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
    let (base, store, workspace_id) = sealed_with_key_one().await;

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

on_both_backends!(a_missing_old_key_is_named_and_nothing_is_lost);
