//! Worker-wide < pool < stub tightening, on real runc containers: the
//! profile a policy gives a container is the one it runs under. A read-only
//! root is the witness (a write to `/` fails or works).

mod common;

use std::path::Path;

use levers9_config::{ContainerSecurityConfig, PoolConfig, SecurityProfileName, WorkerConfig};
use levers9_runtime::{ContainerId, ContainerSpec, Exit};
use levers9_worker::security::{
    Check, HardenRefused, PoolOrigin, SecurityMetrics, SecurityPolicy, Subject,
};

const WRITE_ROOT: &str = "touch /probe 2>/dev/null && echo wrote || echo refused";

/// Pool `eks` hardened, pool `rw` with a writable root, a read-only root
/// worker-wide for any other pool.
fn config() -> WorkerConfig {
    let mut config = WorkerConfig::default();
    let pool = |security| PoolConfig {
        security,
        ..PoolConfig::default()
    };
    config.pools.insert(
        "eks".into(),
        pool(ContainerSecurityConfig {
            profile: Some(SecurityProfileName::Hardened),
            ..Default::default()
        }),
    );
    config.pools.insert(
        "rw".into(),
        pool(ContainerSecurityConfig {
            read_only_rootfs: Some(false),
            ..Default::default()
        }),
    );
    config
}

struct Case {
    config: WorkerConfig,
    pool: &'static str,
    origin: PoolOrigin,
    env: &'static [(&'static str, &'static str)],
    expected: &'static str,
}

/// Runs the witness in a container hardened by the case's policy, or
/// returns why the policy refused to start it.
async fn run_case(
    dir: &Path,
    n: usize,
    case: &Case,
    metrics: &SecurityMetrics,
) -> Result<(), HardenRefused> {
    let id = format!("case-{n}");
    let rootfs = common::busybox_rootfs(dir, &id, &["sh", "touch", "echo"]);
    let runc = common::runc(dir, &format!("l9p-{}-", std::process::id()));
    let policy = SecurityPolicy::resolve(&case.config, case.pool, case.origin);
    let id = ContainerId::parse(id).expect("a valid container id");
    let mut spec = ContainerSpec::new(
        id.clone(),
        &rootfs,
        vec!["sh".into(), "-c".into(), WRITE_ROOT.into()],
    );
    spec.env = case
        .env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let subject = Subject {
        container_id: Some(id),
        stub_id: "stub".into(),
        pool: case.pool.into(),
    };
    policy.harden(&mut spec, &rootfs, &subject, metrics)?;
    let (exit, out) = common::run(&runc, &spec).await;
    assert_eq!(exit, Exit::Code(0));
    assert_eq!(out.trim(), case.expected, "case {n}: pool {}", case.pool);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_then_pool_then_stub_tightening_and_never_loosening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut read_only_global = config();
    read_only_global.container_security.read_only_rootfs = Some(true);
    let configured = PoolOrigin::Configured;
    let cases = [
        // The shipped values: a writable root, as before.
        (
            Case {
                config: WorkerConfig::default(),
                pool: "default",
                origin: configured,
                env: &[],
                expected: "wrote",
            },
            0,
        ),
        // Worker-wide read-only root.
        (
            Case {
                config: read_only_global.clone(),
                pool: "other",
                origin: configured,
                env: &[],
                expected: "refused",
            },
            0,
        ),
        // The pool beats the worker-wide value.
        (
            Case {
                config: read_only_global.clone(),
                pool: "rw",
                origin: configured,
                env: &[],
                expected: "wrote",
            },
            0,
        ),
        (
            Case {
                config: config(),
                pool: "eks",
                origin: configured,
                env: &[],
                expected: "refused",
            },
            0,
        ),
        // A stub tightens its pool.
        (
            Case {
                config: config(),
                pool: "rw",
                origin: configured,
                env: &[("LEVERS9_SECURITY_PROFILE", "hardened")],
                expected: "refused",
            },
            0,
        ),
        // A stub cannot loosen it: its container does not start.
        (
            Case {
                config: config(),
                pool: "eks",
                origin: configured,
                env: &[("LEVERS9_SECURITY_PROFILE", "default")],
                expected: "(not started)",
            },
            1,
        ),
        // An attached cluster's pool takes the worker-wide value.
        (
            Case {
                config: config(),
                pool: "eks",
                origin: PoolOrigin::AttachedCluster,
                env: &[],
                expected: "wrote",
            },
            0,
        ),
    ];
    let metrics = SecurityMetrics::default();
    for (n, (case, refusals)) in cases.iter().enumerate() {
        match run_case(dir.path(), n, case, &metrics).await {
            Ok(()) => assert_eq!(*refusals, 0, "case {n} started"),
            Err(HardenRefused::Stub(refused)) => {
                assert_eq!(refused.reasons.len(), *refusals, "case {n}: {refused}");
                assert_eq!(refused.pool, case.pool);
            }
            Err(other) => panic!("case {n}: {other}"),
        }
    }
    assert_eq!(metrics.count(Check::StubLoosening, "enforce", "eks"), 1);
}
