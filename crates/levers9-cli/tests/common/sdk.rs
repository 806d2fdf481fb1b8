//! The SDK's pytest suite against a real stack.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use levers9_api::v1::{CreateTokenRequest, CreateTokenResponse, RevokeTokenRequest};

use super::fleet::python_image;
use super::stubs::other_workspace;
use super::{backend_env, text, with_token, Backend, Controlplane, SECRET};

/// What the SDK's whole suite leaves out: files that need stacks of their
/// own, whose tests run there.
pub const SUITE_ELSEWHERE: [&str; 5] = [
    "--ignore=tests/test_images.py",          // images.rs
    "--ignore=tests/test_security_remote.py", // function_security.rs
    "--ignore=tests/test_objects.py",         // sdk_objects.rs (on JuiceFS)
    "--ignore=tests/test_sandbox.py",         // sandboxes.rs
    "--ignore=tests/test_spares.py",          // spares.rs
];

/// A controlplane whose functions run on the test Python base image.
pub fn controlplane(backend: Backend, extra: &[(&str, &str)]) -> Controlplane {
    let image = python_image();
    let (registry, name) = image.split_once('/').expect("image has a registry");
    let mut env = backend_env(backend);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    env.push(("LEVERS9_BASE_IMAGE_REGISTRY".into(), registry.into()));
    env.push(("LEVERS9_BASE_IMAGE".into(), name.into()));
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    Controlplane::start_with(env)
}

/// Runs the SDK's pytest suite (`pytest_args` select tests) against the
/// controlplane with a fresh workspace token, a token of another workspace
/// (`LEVERS9_TEST_OTHER_TOKEN`) and `env`; panics with every log on a
/// failure, and when a selected test did not pass: skipped, expected to
/// fail, or not run. So a stack test that starts skipping fails instead of
/// turning quietly green; a test file that needs another stack is left out
/// with `--ignore` by the suite that does not run it.
pub async fn pytest(
    cp: &Controlplane,
    admin: &str,
    worker_log: &str,
    pytest_args: &[&str],
    env: &[(&str, &str)],
) {
    let python = std::env::var("LEVERS9_TEST_PYTHON").unwrap_or_else(|_| {
        panic!(
            "LEVERS9_TEST_PYTHON is not set: run the tests with scripts/test.sh (make test), \
             which makes the SDK's venv"
        )
    });
    let token = workspace_token(cp, admin).await.secret;
    // A stale token: one that worked and was revoked.
    let revoked = workspace_token(cp, admin).await;
    cp.tokens()
        .await
        .revoke_token(with_token(
            RevokeTokenRequest {
                token_id: revoked.token.expect("token").id,
            },
            admin,
        ))
        .await
        .expect("revoke");
    static OTHERS: AtomicUsize = AtomicUsize::new(0);
    let other = other_workspace(
        cp,
        admin,
        &format!("sdk-tests-other-{}", OTHERS.fetch_add(1, Ordering::Relaxed)),
    )
    .await;
    let sdk = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk/python");
    let home = tempfile::tempdir().expect("home");
    let run = |extra: &[&str]| {
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .args(extra)
            // The whole suite unless a file of it is named.
            .args((!pytest_args.iter().any(|a| a.starts_with("tests/"))).then_some("tests"))
            .args(pytest_args)
            .current_dir(sdk)
            .env("HOME", home.path())
            .env("LEVERS9_TEST_CONTROLPLANE_HOST", "127.0.0.1")
            .env("LEVERS9_TEST_CONTROLPLANE_PORT", cp.grpc_port.to_string())
            .env("LEVERS9_TEST_TOKEN", &token)
            .env("LEVERS9_TEST_REVOKED_TOKEN", &revoked.secret)
            .env("LEVERS9_TEST_OTHER_TOKEN", &other)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .envs(env.iter().copied())
            .output()
            .expect("run pytest")
    };
    let collected = run(&["--collect-only"]);
    let listing = text(&collected.stdout);
    let selected = selected_count(&listing).unwrap_or_else(|| {
        panic!(
            "pytest collected nothing:\n{listing}\n{}",
            text(&collected.stderr)
        )
    });
    // The summary names every test that did not pass, and why.
    let out = run(&["-rfEsxX"]);
    let report = text(&out.stdout);
    let fail = |why: &str| -> ! {
        panic!(
            "the SDK tests failed: {why}\n{report}\n{}\n--- controlplane ---\n{}\n--- worker ---\n{}",
            text(&out.stderr),
            cp.log(),
            worker_log
        )
    };
    if !out.status.success() {
        fail("pytest exited with an error");
    }
    let counts = outcome_counts(&report);
    let passed = counts.get("passed").copied().unwrap_or(0);
    let other_outcomes: Vec<_> = counts
        .iter()
        .filter(|(outcome, _)| !matches!(outcome.as_str(), "passed" | "deselected" | "warning"))
        .collect();
    if passed != selected || !other_outcomes.is_empty() {
        fail(&format!(
            "{selected} tests were selected and {passed} passed; other outcomes: \
             {other_outcomes:?} (every selected test must pass: give a test that needs \
             another stack its own run and --ignore its file here)"
        ));
    }
    println!("{report}");
}

/// How many tests `pytest --collect-only -q` selected, from its last line:
/// "12 tests collected in 0.1s" or "3/12 tests collected (9 deselected) ...".
fn selected_count(listing: &str) -> Option<usize> {
    let line = listing.lines().rev().find(|l| l.contains(" collected"))?;
    let count = line.split_whitespace().next()?;
    let selected = count.split('/').next()?;
    selected.parse().ok().filter(|n| *n > 0)
}

/// The closing line's counts by outcome: "3 passed, 1 skipped, 2
/// deselected in 4.56s" is {passed: 3, skipped: 1, deselected: 2}.
fn outcome_counts(report: &str) -> BTreeMap<String, usize> {
    let Some(line) = report.lines().rev().find(|l| {
        l.contains(" in ")
            && l.chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit() || c == '=')
    }) else {
        return BTreeMap::new();
    };
    let line = line.trim_matches(|c: char| c == '=' || c.is_whitespace());
    let counts = line.rsplit_once(" in ").map_or(line, |(counts, _)| counts);
    counts
        .split(", ")
        .filter_map(|part| {
            let (n, outcome) = part.trim().split_once(' ')?;
            Some((outcome.trim_end_matches('s').to_owned(), n.parse().ok()?))
        })
        .collect()
}

pub async fn workspace_token(cp: &Controlplane, admin: &str) -> CreateTokenResponse {
    cp.tokens()
        .await
        .create_token(with_token(
            CreateTokenRequest {
                token_type: "workspace".into(),
                description: "sdk tests".into(),
            },
            admin,
        ))
        .await
        .expect("workspace token")
        .into_inner()
}
