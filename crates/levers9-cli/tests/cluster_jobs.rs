//! The worker Job an attached cluster's agent creates, as `levers9 cluster
//! agent --print-job` writes it: with every Job option of `cluster join` it
//! passes `kubernetes-validate --strict` and names its Secrets without
//! holding a secret. No Kubernetes API server runs on the test machines;
//! the agent's requests are checked in crates/levers9-kube's tests.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{text, BIN, WORKER_BIN};

fn kubernetes_validate() -> PathBuf {
    let path = std::env::var_os("LEVERS9_TEST_KUBERNETES_VALIDATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../.tmp/deploy-tools/venv/bin/kubernetes-validate")
        });
    assert!(
        path.exists(),
        "{} is missing: scripts/test-deploy.sh installs it (or set LEVERS9_TEST_KUBERNETES_VALIDATE)",
        path.display()
    );
    path
}

#[test]
fn the_agents_job_with_every_option_is_a_valid_job_without_secrets() {
    let out = Command::new(BIN)
        .args(["cluster", "agent", "--print-job"])
        .args(["--pool", "gke-l4", "--namespace", "levers9-workers"])
        .args(["--worker-image", "registry.example.com/levers9/worker:9"])
        .args(["--controlplane", "levers9-grpc.example.com:443"])
        .args(["--gpu-type", "L4", "--memory-mib", "8192"])
        .args(["--insecure-registry", "registry.internal:5000"])
        .args(["--registry-credentials-secret", "levers9-registry"])
        .args(["--image-pull-secret", "regcred"])
        .args(["--juicefs-secret", "levers9-worker-juicefs"])
        .args([
            "--juicefs-bucket",
            "https://volumes.s3.us-east-2.amazonaws.com",
        ])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .expect("run levers9");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json = text(&out.stdout);
    let job: serde_json::Value = serde_json::from_str(&json).expect("a JSON Job");
    assert_eq!(job["kind"], "Job");
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["imagePullSecrets"][0]["name"], "regcred");
    // The container's arguments are the worker image's entrypoint's: each
    // is one levers9-worker takes (clap refuses an unknown one before it
    // reaches --help).
    let args: Vec<&str> = pod["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let parsed = Command::new(WORKER_BIN)
        .args(&args)
        .arg("--help")
        .output()
        .expect("run levers9-worker");
    assert!(
        parsed.status.success(),
        "levers9-worker {args:?}: {}",
        text(&parsed.stderr)
    );
    let env = pod["containers"][0]["env"].as_array().expect("env");
    assert!(
        env.iter()
            .filter(|e| e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("LEVERS9_JUICEFS_")))
            .count()
            >= 4,
        "{env:?}"
    );

    let file = tempfile::Builder::new()
        .suffix(".json")
        .tempfile()
        .expect("file");
    std::fs::write(file.path(), &json).expect("write");
    let checked = Command::new(kubernetes_validate())
        .args(["--quiet", "--strict", "-k", "1.33"])
        .arg(file.path())
        .output()
        .expect("run kubernetes-validate");
    assert!(
        checked.status.success(),
        "{}{}\n{json}",
        text(&checked.stdout),
        text(&checked.stderr)
    );
}
