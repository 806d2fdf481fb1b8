//! The CLI as a user runs it: first run, contexts, token commands.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::{run_cli, text, Backend, Controlplane, SECRET};

async fn first_run_bootstraps_and_saves_the_admin_token(backend: Backend) {
    let cp = Controlplane::start(backend);
    let home = tempfile::tempdir().expect("home");
    let address = format!("127.0.0.1:{}\n\n", cp.grpc_port);
    let out = cp.cli(
        home.path(),
        &["token", "list"],
        &[("LEVERS9_BOOTSTRAP_SECRET", SECRET)],
        Some(&address),
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("Saved context \"default\""));
    let listed = text(&out.stdout);
    assert!(listed.contains("admin"), "{listed}");
    assert!(
        !listed.contains("l9_"),
        "token list never prints secrets: {listed}"
    );

    let dir = home.path().join(".levers9");
    let file = dir.join("config.toml");
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("exists").permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&file), 0o600);
    let saved = std::fs::read_to_string(&file).expect("config");
    assert!(saved.contains("token = \"l9_"), "{saved}");

    // The saved context works on its own from now on, with no stdin at all.
    let again = cp.cli(home.path(), &["token", "list"], &[], None);
    assert!(again.status.success(), "{}", text(&again.stderr));

    // And the secret no longer does anything.
    let other_home = tempfile::tempdir().expect("home");
    let out = cp.cli(
        other_home.path(),
        &["token", "list"],
        &[("LEVERS9_BOOTSTRAP_SECRET", SECRET)],
        Some(&address),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("already has a workspace"),
        "{}",
        text(&out.stderr)
    );
}

async fn token_commands_create_list_and_revoke(backend: Backend) {
    let cp = Controlplane::start(backend);
    let admin = cp.admin_token().await;
    let home = tempfile::tempdir().expect("home");
    let port = cp.grpc_port.to_string();
    let env = [
        ("LEVERS9_TOKEN", admin.as_str()),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
        ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
    ];
    let created = cp.cli(
        home.path(),
        &[
            "token",
            "create",
            "--type",
            "worker",
            "--description",
            "gpu box",
        ],
        &env,
        None,
    );
    assert!(created.status.success(), "{}", text(&created.stderr));
    let secret = text(&created.stdout).trim().to_owned();
    assert!(secret.starts_with("l9_"));

    let listed = text(&cp.cli(home.path(), &["token", "list"], &env, None).stdout);
    let row = listed
        .lines()
        .find(|l| l.contains("gpu box"))
        .expect("listed");
    assert!(row.contains("worker"));
    let id = row.split_whitespace().next().expect("id column").to_owned();

    let revoked = cp.cli(home.path(), &["token", "revoke", &id], &env, None);
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    let listed = text(&cp.cli(home.path(), &["token", "list"], &env, None).stdout);
    let row = listed
        .lines()
        .find(|l| l.contains(&id))
        .expect("still listed");
    assert!(!row.trim_end().ends_with('-'), "revoked time shown: {row}");

    let with_revoked = [
        ("LEVERS9_TOKEN", secret.as_str()),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
        ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
    ];
    let refused = cp.cli(home.path(), &["workspace", "show"], &with_revoked, None);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("revoked"),
        "{}",
        text(&refused.stderr)
    );
}

async fn contexts_are_created_listed_selected_and_deleted(backend: Backend) {
    let cp = Controlplane::start(backend);
    let admin = cp.admin_token().await;
    let home = tempfile::tempdir().expect("home");
    let port = cp.grpc_port.to_string();
    let create = |name: &str| {
        cp.cli(
            home.path(),
            &[
                "config",
                "create",
                name,
                "--host",
                "127.0.0.1",
                "--port",
                &port,
            ],
            &[],
            Some(&format!("{admin}\n")),
        )
    };
    assert!(create("one").status.success());
    let out = create("two");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&cp.cli(home.path(), &["config", "list"], &[], None).stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with('*') && l.contains("two")),
        "{listed}"
    );
    let select = cp.cli(home.path(), &["config", "select", "one"], &[], None);
    assert!(select.status.success());
    let shown = text(&cp.cli(home.path(), &["config", "show"], &[], None).stdout);
    assert!(shown.contains("name: one"), "{shown}");
    assert!(
        shown.contains("token: <hidden>") && !shown.contains(&admin),
        "{shown}"
    );
    let ws = cp.cli(home.path(), &["workspace", "show"], &[], None);
    assert!(
        text(&ws.stdout).contains("name: default"),
        "{}",
        text(&ws.stderr)
    );
    assert!(cp
        .cli(home.path(), &["config", "delete", "two"], &[], None)
        .status
        .success());
    let missing = cp.cli(
        home.path(),
        &["--context", "two", "workspace", "show"],
        &[],
        None,
    );
    assert!(text(&missing.stderr).contains("no context named \"two\""));

    // A wrong token is refused before it is saved.
    let bad = cp.cli(
        home.path(),
        &[
            "config",
            "create",
            "bad",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
        ],
        &[],
        Some("l9_wrong\n"),
    );
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("unknown token"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn without_config_or_terminal_the_cli_fails_instead_of_waiting() {
    let home = tempfile::tempdir().expect("home");
    let out = run_cli(home.path(), &["token", "list"], &[], None);
    assert!(!out.status.success());
    let message = text(&out.stderr);
    assert!(message.contains("no terminal"), "{message}");
    assert!(message.contains("levers9 config create"), "{message}");
    assert!(!home.path().join(".levers9/config.toml").exists());
}

#[test]
fn empty_token_without_a_bootstrap_secret_says_what_to_do() {
    let home = tempfile::tempdir().expect("home");
    let out = run_cli(
        home.path(),
        &["token", "list"],
        &[],
        Some("127.0.0.1:1\n\n"),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("LEVERS9_BOOTSTRAP_SECRET is not set"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn help_lists_every_command() {
    let home = tempfile::tempdir().expect("home");
    let out = run_cli(home.path(), &["--help"], &[], None);
    let help = text(&out.stdout);
    for command in ["controlplane", "config", "token", "workspace"] {
        assert!(help.contains(command), "{help}");
    }
    for command in ["pool ", "machine ", "agent ", "shell "] {
        assert!(help.contains(&format!("\n  {command}")), "{help}");
    }
    let machine = text(&run_cli(home.path(), &["machine", "--help"], &[], None).stdout);
    for verb in ["create", "list", "drain", "delete"] {
        assert!(machine.contains(&format!("\n  {verb} ")), "{machine}");
    }
    let pool = text(&run_cli(home.path(), &["pool", "--help"], &[], None).stdout);
    for verb in ["create", "list", "delete", "join"] {
        assert!(pool.contains(&format!("\n  {verb} ")), "{pool}");
    }
    let agent = text(&run_cli(home.path(), &["agent", "--help"], &[], None).stdout);
    for flag in [
        "--join-token-file",
        "--credential-file",
        "--install-systemd",
    ] {
        assert!(agent.contains(flag), "{agent}");
    }
}

on_both_backends!(
    first_run_bootstraps_and_saves_the_admin_token,
    token_commands_create_list_and_revoke,
    contexts_are_created_listed_selected_and_deleted,
);
