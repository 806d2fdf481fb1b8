//! A function's own hardening requests on real runc containers: the SDK's
//! `test_security_remote.py` against a controlplane and two runc workers, one
//! of a pool with the shipped security and one of a pool whose seccomp
//! enforces (see docs/security.md, "Who decides: worker-wide < pool < stub").
//! The strict pool's worker has no config of its own: its override comes
//! from the controlplane's config at attach (docs/security.md, "Workers
//! get the hardening keys from the controlplane").

mod common;

use common::fleet::Worker;
use common::sdk::{controlplane, pytest};
use common::Backend;

/// The pool whose seccomp enforces; only functions naming it run there.
const STRICT_POOL: &str = "strict";

#[tokio::test]
async fn a_function_tightens_its_pool_and_cannot_loosen_it() {
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("levers9.yaml");
    std::fs::write(
        &config,
        format!(
            "worker:\n  pools:\n    {STRICT_POOL}:\n      requiresPoolSelector: true\n      \
             security:\n        seccomp: enforce\n"
        ),
    )
    .expect("config");
    let config = config.display().to_string();
    let cp = controlplane(Backend::Embedded, &[("LEVERS9_CONFIG", &config)]);
    let admin = cp.admin_token().await;
    let env = [("LEVERS9_CONFIG".to_owned(), config.clone())];
    let shipped = Worker::start_with_env(&cp, &admin, "default", &env).await;
    // No config file, as a Kubernetes worker Job or an agent has none: the
    // pool's override reaches it from the controlplane when it attaches.
    let strict = Worker::start(&cp, &admin, STRICT_POOL, "runc").await;
    let logs = format!(
        "--- worker of default ---\n{}\n--- worker of {STRICT_POOL} ---\n{}",
        shipped.log(),
        strict.log()
    );
    pytest(
        &cp,
        &admin,
        &logs,
        &["tests/test_security_remote.py"],
        &[("LEVERS9_TEST_STRICT_POOL", STRICT_POOL)],
    )
    .await;
}
