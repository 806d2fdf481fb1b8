//! The controlplane process: config errors, printed config, shipped-default
//! warnings, health, readiness and metrics.

mod common;

use std::process::{Command, Stdio};

use common::{text, Backend, Controlplane, BIN};
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

fn controlplane_output(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let home = tempfile::tempdir().expect("home");
    Command::new(BIN)
        .arg("controlplane")
        .args(args)
        .env_clear()
        .env("HOME", home.path())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run levers9 controlplane")
}

#[test]
fn bad_config_file_names_the_key_and_the_file() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("levers9.yaml");
    std::fs::write(&path, "database:\n  postgres:\n    prot: 5432\n").expect("write");
    let out = controlplane_output(&["--config", path.to_str().expect("utf8")], &[]);
    assert!(!out.status.success());
    let message = text(&out.stderr);
    assert!(message.contains(path.to_str().expect("utf8")), "{message}");
    assert!(message.contains("database.postgres"), "{message}");
    assert!(message.contains("unknown field `prot`"), "{message}");

    std::fs::write(&path, "controlplane:\n  grpc:\n    port: [1]\n").expect("write");
    let out = controlplane_output(&[], &[("LEVERS9_CONFIG", path.to_str().expect("utf8"))]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("controlplane.grpc.port"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn print_config_redacts_every_secret() {
    let out = controlplane_output(
        &["--print-config"],
        &[
            ("LEVERS9_BOOTSTRAP_SECRET", "bootstrap-1234"),
            ("LEVERS9_POSTGRES_PASSWORD", "pg-1234"),
            ("LEVERS9_REDIS_PASSWORD", "redis-1234"),
            ("LEVERS9_GRPC_PORT", "2993"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    assert!(printed.contains("port: 2993"), "{printed}");
    assert!(printed.contains("bootstrapSecret: <redacted>"), "{printed}");
    assert!(
        printed.contains("encryptionKey: '<redacted: shipped default>'")
            || printed.contains("encryptionKey: <redacted: shipped default>"),
        "{printed}"
    );
    for secret in ["bootstrap-1234", "pg-1234", "redis-1234"] {
        assert!(!printed.contains(secret), "{secret} printed:\n{printed}");
    }
}

#[test]
fn shipped_encryption_key_is_refused_when_asked() {
    let out = controlplane_output(&[], &[("LEVERS9_REFUSE_DEFAULT_ENCRYPTION_KEY", "true")]);
    assert!(!out.status.success());
    let message = text(&out.stderr);
    assert!(
        message.contains("shipped database encryption key"),
        "{message}"
    );
    assert!(
        message.contains("previousEncryptionKeys"),
        "says how to rotate: {message}"
    );
}

#[test]
fn malformed_encryption_key_is_refused_without_repeating_it() {
    let out = controlplane_output(&[], &[("LEVERS9_ENCRYPTION_KEY", "dG9vLXNob3J0")]);
    assert!(!out.status.success());
    let message = text(&out.stderr);
    assert!(
        message.contains("database.postgres.encryptionKey"),
        "{message}"
    );
    assert!(message.contains("32 random bytes"), "{message}");
    assert!(!message.contains("dG9vLXNob3J0"), "{message}");
}

/// The refuse flag is off unless it is exactly `true`, and with a key of
/// one's own the controlplane starts with the flag on.
#[tokio::test]
async fn refuse_flag_lets_a_key_of_ones_own_through() {
    let own_key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    for env in [
        vec![
            (
                "LEVERS9_REFUSE_DEFAULT_ENCRYPTION_KEY".to_owned(),
                "true".to_owned(),
            ),
            ("LEVERS9_ENCRYPTION_KEY".to_owned(), own_key.to_owned()),
        ],
        vec![(
            "LEVERS9_REFUSE_DEFAULT_ENCRYPTION_KEY".to_owned(),
            "false".to_owned(),
        )],
    ] {
        let cp = Controlplane::start_with(env);
        let ready = reqwest::get(cp.http("/readyz")).await.expect("readyz");
        assert_eq!(ready.status(), 200);
    }
}

async fn shipped_defaults_are_warned_about_one_by_one(backend: Backend) {
    let cp = Controlplane::start(backend);
    let log = cp.log();
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("WARN")).collect();
    assert!(
        warnings
            .iter()
            .any(|l| l.contains("database.postgres.encryptionKey")),
        "{log}"
    );
    let servers = backend == Backend::Servers;
    assert_eq!(
        warnings
            .iter()
            .any(|l| l.contains("database.postgres.password")),
        servers,
        "{log}"
    );
    assert_eq!(
        warnings
            .iter()
            .any(|l| l.contains("database.redis.password")),
        servers,
        "{log}"
    );
    let which = if servers {
        "records: Postgres"
    } else {
        "records: embedded SQLite"
    };
    assert!(log.contains(which), "{log}");
}

async fn health_readiness_and_metrics_answer(backend: Backend) {
    let cp = Controlplane::start(backend);
    let http = reqwest::Client::new();
    let health = http.get(cp.http("/healthz")).send().await.expect("healthz");
    assert_eq!(health.status(), 200);
    let ready = http.get(cp.http("/readyz")).send().await.expect("readyz");
    assert_eq!(ready.status(), 200);
    let body: serde_json::Value = ready.json().await.expect("json");
    assert_eq!(body["ready"], true);
    let expected = if backend == Backend::Servers {
        ("postgres", "redis")
    } else {
        ("sqlite", "memory")
    };
    assert_eq!(body["store"]["backend"], expected.0);
    assert_eq!(body["state"]["backend"], expected.1);

    let serving = HealthClient::new(cp.channel().await)
        .check(HealthCheckRequest {
            service: "levers9.v1.AuthService".into(),
        })
        .await
        .expect("grpc health")
        .into_inner();
    assert_eq!(serving.status, 1, "SERVING");

    cp.admin_token().await;
    let metrics = http
        .get(cp.http("/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert!(metrics.contains("levers9_requests_total{code=\"0\",method=\"/levers9.v1.AuthService/Authorize\",transport=\"grpc\"}"), "{metrics}");
    assert!(
        metrics.contains("levers9_request_duration_seconds_bucket"),
        "{metrics}"
    );
    assert!(
        metrics.contains("route") || metrics.contains("transport=\"http\""),
        "{metrics}"
    );
}

on_both_backends!(
    shipped_defaults_are_warned_about_one_by_one,
    health_readiness_and_metrics_answer,
);
