//! The SDK's Secret and Volume objects (sdk/python/tests/test_objects.py)
//! on a stack with JuiceFS volumes, which the SDK suite's stack has not: a
//! controlplane on Postgres and Redis, a runc worker mounting the same file
//! system. Afterwards, the inline secret's value is looked for where it
//! must not be: the database, the hot state and the logs.

mod common;

use std::process::Command;

use common::fleet::{python_image, Worker};
use common::juicefs::{MetaRedis, MountCleanup};
use common::sdk::pytest;
use common::{backend_env, database_url, text, Backend, Controlplane, SECRET};

/// Everything the hot state holds under `prefix`, as text.
fn redis_contents(prefix: &str) -> String {
    let url = std::env::var("LEVERS9_TEST_REDIS_URL").expect("LEVERS9_TEST_REDIS_URL");
    let cli = |args: &[&str]| {
        let out = Command::new("redis-cli")
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
            "zset" => cli(&["ZRANGE", key, "0", "-1"]),
            other => format!("<{other}>"),
        };
        all.push_str(key);
        all.push_str(&value);
    }
    all
}

fn psql(url: &str, query: &str) -> String {
    let out = Command::new("psql")
        .args([url, "-At", "-c", query])
        .output()
        .expect("psql runs");
    assert!(out.status.success(), "psql: {}", text(&out.stderr));
    text(&out.stdout)
}

#[tokio::test]
async fn secret_and_volume_objects_work_end_to_end_and_inline_values_stay_sealed() {
    let redis = MetaRedis::start();
    let juicefs = redis.juicefs_env(4);
    let mut env = backend_env(Backend::Servers);
    let database = database_url(&env);
    let prefix = env
        .iter()
        .find(|(k, _)| k == "LEVERS9_REDIS_KEY_PREFIX")
        .map(|(_, v)| v.clone())
        .expect("a key prefix");
    let image = python_image();
    let (registry, name) = image.split_once('/').expect("image has a registry");
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    env.push(("LEVERS9_BASE_IMAGE_REGISTRY".into(), registry.into()));
    env.push(("LEVERS9_BASE_IMAGE".into(), name.into()));
    env.extend(juicefs.clone());
    let cp = Controlplane::start_with(env);
    let admin = cp.admin_token().await;
    let worker = Worker::start_with_env(&cp, &admin, "default", &juicefs).await;
    let _cleanup = MountCleanup(vec![
        cp.dir.path().to_owned(),
        worker.state_dir.path().to_owned(),
    ]);

    // Unique per run, so a match below can only be this test's value.
    let value = format!("inline-{}-{}", std::process::id(), common::free_port());
    pytest(
        &cp,
        &admin,
        &worker.log(),
        &["tests/test_objects.py"],
        &[
            ("LEVERS9_TEST_VOLUMES", "1"),
            ("LEVERS9_TEST_CLI", common::BIN),
            ("LEVERS9_TEST_INLINE_SECRET", &value),
        ],
    )
    .await;

    // Sealed rows, under names that do not show the value.
    let rows = psql(
        &database,
        "SELECT name, key_id FROM sealed_values WHERE kind = 'secret' \
         AND name LIKE 'LEVERS9_INLINE_%' ORDER BY name",
    );
    assert!(
        rows.lines().filter(|r| r.contains("_L9_INLINE_A|")).count() >= 2
            && rows.lines().any(|r| r.contains("_L9_INLINE_B|")),
        "inline secret rows: {rows}"
    );
    let dump = Command::new("pg_dump")
        .args(["--data-only", &database])
        .output()
        .expect("pg_dump runs");
    assert!(dump.status.success(), "pg_dump: {}", text(&dump.stderr));
    let dump = text(&dump.stdout);
    assert!(
        dump.contains("LEVERS9_INLINE_"),
        "the dump has the stub's names"
    );
    assert!(
        !dump.contains(&value),
        "the inline value is in the database in clear"
    );
    assert!(
        !redis_contents(&prefix).contains(&value),
        "the inline value is in the hot state"
    );
    for (place, log) in [("controlplane", cp.log()), ("worker", worker.log())] {
        assert!(
            !log.contains(&value),
            "the inline value is in the {place} log"
        );
    }
}
