//! A controlplane serving TLS itself (`controlplane.tls`) on a port other
//! than 443, with a certificate from a private CA made here with openssl:
//! the CLI, the Python SDK and a worker reach it only when told to use TLS
//! and to trust that CA, and are told what to do when they are not.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::fleet::{busybox_image, Worker};
use common::{run_cli, text, Controlplane, SECRET};

/// A CA and a certificate for localhost and 127.0.0.1 it signed.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().expect("dir");
        let d = dir.path();
        std::fs::write(
            d.join("server.ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
             keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .expect("ext file");
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
        openssl(
            d,
            &["req", "-x509", "-nodes", "-days", "1"],
            &ec,
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-subj",
                "/CN=levers9 test CA",
            ],
        );
        openssl(
            d,
            &["req", "-nodes"],
            &ec,
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
        );
        openssl(
            d,
            &["x509", "-req", "-days", "1"],
            &[],
            &[
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-extfile",
                "server.ext",
                "-out",
                "server.pem",
            ],
        );
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn ca(&self) -> String {
        self.path("ca.pem").display().to_string()
    }

    /// A controlplane on the embedded state serving this certificate.
    fn controlplane(&self) -> Controlplane {
        Controlplane::start_with(vec![
            ("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()),
            (
                "LEVERS9_TLS_CERT_FILE".into(),
                self.path("server.pem").display().to_string(),
            ),
            (
                "LEVERS9_TLS_KEY_FILE".into(),
                self.path("server.key").display().to_string(),
            ),
        ])
    }
}

fn openssl(dir: &Path, head: &[&str], key: &[&str], tail: &[&str]) {
    let out = Command::new("openssl")
        .args(head)
        .args(key)
        .args(tail)
        .current_dir(dir)
        .output()
        .expect("openssl runs (scripts/install-test-packages.sh installs it)");
    assert!(
        out.status.success(),
        "openssl {head:?}: {}",
        text(&out.stderr)
    );
}

/// `levers9 config create tls --tls --ca-file CA` with the bootstrap secret
/// and an empty token: the admin token, saved in the context under `home`.
fn bootstrap_context(cp: &Controlplane, pki: &Pki, home: &Path) -> String {
    let port = cp.grpc_port.to_string();
    let ca = pki.ca();
    let out = run_cli(
        home,
        &[
            "config",
            "create",
            "tls",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--tls",
            "--ca-file",
            &ca,
        ],
        &[("LEVERS9_BOOTSTRAP_SECRET", SECRET)],
        Some("\n"),
    );
    assert!(
        out.status.success(),
        "config create: {}\n{}",
        text(&out.stderr),
        cp.log()
    );
    let saved = std::fs::read_to_string(home.join(".levers9/config.toml")).expect("config");
    let saved: toml::Value = saved.parse().expect("toml");
    assert_eq!(saved["contexts"]["tls"]["tls"].as_bool(), Some(true));
    assert_eq!(
        saved["contexts"]["tls"]["ca_file"].as_str(),
        Some(ca.as_str())
    );
    saved["contexts"]["tls"]["token"]
        .as_str()
        .expect("token")
        .to_owned()
}

#[tokio::test]
async fn the_cli_reaches_a_tls_controlplane_only_when_told_to_use_tls() {
    let pki = Pki::new();
    let cp = pki.controlplane();
    let home = tempfile::tempdir().expect("home");
    let admin = bootstrap_context(&cp, &pki, home.path());

    // The saved context (tls = true, ca_file) works for later commands.
    let listed = run_cli(home.path(), &["token", "list"], &[], None);
    assert!(listed.status.success(), "{}", text(&listed.stderr));

    let port = cp.grpc_port.to_string();
    let plain = [
        ("LEVERS9_TOKEN", admin.as_str()),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
        ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
    ];
    let fresh = tempfile::tempdir().expect("home");
    let refused = run_cli(fresh.path(), &["token", "list"], &plain, None);
    let stderr = text(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("the controlplane speaks TLS") && stderr.contains("add --tls"),
        "{stderr}"
    );
    assert!(stderr.contains("LEVERS9_CONTROLPLANE_TLS=true"), "{stderr}");

    let ca = pki.ca();
    let mut with_env = plain.to_vec();
    with_env.extend([
        ("LEVERS9_CONTROLPLANE_TLS", "true"),
        ("LEVERS9_CONTROLPLANE_CA", ca.as_str()),
    ]);
    let listed = run_cli(fresh.path(), &["token", "list"], &with_env, None);
    assert!(listed.status.success(), "{}", text(&listed.stderr));

    // TLS without the private CA: the certificate is not trusted.
    let untrusted = run_cli(fresh.path(), &["token", "list"], &with_env[..4], None);
    let stderr = text(&untrusted.stderr);
    assert!(!untrusted.status.success());
    assert!(
        stderr.contains("UnknownIssuer") && stderr.contains("LEVERS9_CONTROLPLANE_CA"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_http_port_serves_https_and_tells_plain_http_to_use_it() {
    let pki = Pki::new();
    let cp = pki.controlplane();
    let url = format!("127.0.0.1:{}/healthz", cp.http_port);
    let https = Command::new("curl")
        .args(["-sS", "--cacert", &pki.ca(), &format!("https://{url}")])
        .output()
        .expect("curl");
    assert_eq!(text(&https.stdout), "ok\n", "{}", text(&https.stderr));
    let plain = Command::new("curl")
        .args(["-sS", "-w", "%{http_code}", &format!("http://{url}")])
        .output()
        .expect("curl");
    let answer = text(&plain.stdout);
    assert!(
        answer.contains("speaks HTTPS") && answer.ends_with("400"),
        "{answer}"
    );
}

#[tokio::test]
async fn the_python_sdk_calls_a_tls_controlplane() {
    let python = std::env::var("LEVERS9_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("LEVERS9_TEST_PYTHON is not set: run the tests with scripts/test.sh (make test)")
    });
    let pki = Pki::new();
    let cp = pki.controlplane();
    let home = tempfile::tempdir().expect("home");
    let admin = bootstrap_context(&cp, &pki, home.path());
    let call = "from levers9.client import get_client\n\
                from levers9.v1 import function_pb2\n\
                from levers9.errors import Levers9Error\n\
                try:\n    answer = get_client().call('ListTasks', function_pb2.ListTasksRequest())\n\
                except Levers9Error as e:\n    print('refused:', e)\n\
                else:\n    print('tasks:', len(answer.tasks))\n";
    let port = cp.grpc_port.to_string();
    let ca = pki.ca();
    // A HOME without the context, whose tls = true would apply.
    let fresh = tempfile::tempdir().expect("home");
    let run = |env: &[(&str, &str)]| {
        let out = Command::new(&python)
            .args(["-c", call])
            .env_clear()
            .env("HOME", fresh.path())
            .env("LEVERS9_TOKEN", &admin)
            .env("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1")
            .env("LEVERS9_CONTROLPLANE_PORT", &port)
            .envs(env.iter().copied())
            .output()
            .expect("python runs");
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let over_tls = run(&[
        ("LEVERS9_CONTROLPLANE_TLS", "true"),
        ("LEVERS9_CONTROLPLANE_CA", &ca),
    ]);
    assert_eq!(over_tls, "tasks: 0\n");
    let plain = run(&[]);
    assert!(
        plain.starts_with("refused:") && plain.contains("the controlplane speaks TLS"),
        "{plain}"
    );
}

#[tokio::test]
async fn a_worker_joins_over_tls_and_runs_a_container() {
    let pki = Pki::new();
    let cp = pki.controlplane();
    let home = tempfile::tempdir().expect("home");
    bootstrap_context(&cp, &pki, home.path());
    let created = run_cli(
        home.path(),
        &["token", "create", "--type", "worker"],
        &[],
        None,
    );
    assert!(created.status.success(), "{}", text(&created.stderr));
    let worker_token = text(&created.stdout).trim().to_owned();

    let state_dir = tempfile::Builder::new()
        .prefix("l9w-")
        .tempdir()
        .expect("dir");
    let ca = pki.ca();
    let worker = Worker::launch(
        &format!("127.0.0.1:{}", cp.grpc_port),
        &worker_token,
        &[
            "--pool",
            "default",
            "--runtime",
            "runc",
            "--tls",
            "--ca-file",
            &ca,
        ],
        &[],
        state_dir,
    );
    let image = busybox_image();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let listed = text(&run_cli(home.path(), &["worker", "list"], &[], None).stdout);
        if listed.contains("ready") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the worker never joined over TLS:\n{}\n{}",
            worker.log(),
            cp.log()
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let ran = run_cli(
        home.path(),
        &["container", "run", &image, "--", "echo", "hello over tls"],
        &[],
        None,
    );
    assert_eq!(
        text(&ran.stdout),
        "hello over tls\n",
        "{}\n{}",
        text(&ran.stderr),
        worker.log()
    );
}
