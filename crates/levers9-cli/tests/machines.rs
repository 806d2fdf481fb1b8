//! Bring your own machines end to end: pools and machines through the CLI,
//! the join file, the agent download, a second host (a network namespace)
//! that joins with the join file and runs a container, and the refusals
//! (a reused or expired join token, dev builds that are off).
//!
//! A real agent dev build (`cargo build` on the controlplane) is not run
//! here: it takes minutes on the CI machine. Only its refusal is tested.

mod common;
#[path = "machines/netns.rs"]
mod netns;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::fleet::busybox_image;
use common::{text, with_token, Backend, Controlplane, BIN};
use levers9_api::v1::machine_service_client::MachineServiceClient;
use levers9_api::v1::worker_service_client::WorkerServiceClient;
use levers9_api::v1::{DrainWorkerRequest, JoinMachineRequest, ListMachinesRequest, MachineState};

/// Runs the CLI as the admin with its own HOME.
fn cli(cp: &Controlplane, home: &Path, admin: &str, args: &[&str]) -> std::process::Output {
    let port = cp.grpc_port.to_string();
    cp.cli(
        home,
        args,
        &[
            ("LEVERS9_TOKEN", admin),
            ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
            ("LEVERS9_CONTROLPLANE_PORT", &port),
        ],
        None,
    )
}

/// `machine create` in `home`: the machine id and the join file.
fn create_machine(
    cp: &Controlplane,
    home: &Path,
    admin: &str,
    extra: &[&str],
) -> (String, PathBuf) {
    let mut args = vec!["machine", "create", "--pool", "boxes"];
    args.extend_from_slice(extra);
    let out = cli(cp, home, admin, &args);
    assert!(
        out.status.success(),
        "machine create: {}",
        text(&out.stderr)
    );
    let dir = home.join(".levers9/machines");
    let entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the machines directory")
        .map(|e| e.expect("entry").path())
        .collect();
    let file = entries
        .iter()
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .expect("a join file")
        .clone();
    let id = file.file_stem().unwrap().to_string_lossy().into_owned();
    (id, file)
}

/// The join token inside a join file.
fn join_token_of(file: &Path) -> String {
    let script = std::fs::read_to_string(file).expect("join file");
    script
        .lines()
        .find(|l| l.starts_with("l9j_"))
        .expect("the join token is in the file")
        .to_owned()
}

async fn machines(cp: &Controlplane) -> MachineServiceClient<tonic::transport::Channel> {
    MachineServiceClient::new(cp.channel().await)
}

async fn stack_with_pool() -> (Controlplane, String, tempfile::TempDir) {
    let cp = Controlplane::start(Backend::Servers);
    let admin = cp.admin_token().await;
    let home = tempfile::tempdir().expect("home");
    let out = cli(&cp, home.path(), &admin, &["pool", "create", "boxes"]);
    assert!(out.status.success(), "pool create: {}", text(&out.stderr));
    (cp, admin, home)
}

#[tokio::test]
async fn machine_create_writes_a_private_join_file_and_shows_it_with_secrets_hidden() {
    let (cp, admin, home) = stack_with_pool().await;
    let out = cli(
        &cp,
        home.path(),
        &admin,
        &["machine", "create", "--pool", "boxes"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (id, file) = create_machine(&cp, home.path(), &admin, &["--ttl", "30m"]);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode(&file),
        0o600,
        "the join file is readable by its owner only"
    );
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    assert_eq!(
        file.file_name().unwrap().to_string_lossy(),
        format!("{id}.sh")
    );

    let script = std::fs::read_to_string(&file).unwrap();
    let token = join_token_of(&file);
    assert!(token.len() > 40, "{token}");
    assert!(script.starts_with("#!/bin/sh\n"), "{script}");
    assert!(
        script.contains(&format!("machine {id} of pool boxes")),
        "{script}"
    );
    assert!(script.contains(&format!(
        "LEVERS9_CONTROLPLANE='127.0.0.1:{}'",
        cp.grpc_port
    )));
    assert!(script.contains("/levers9-$os-$arch"), "{script}");
    assert!(script.contains("agent --join-token-file"), "{script}");

    // The first create's output: the command with the secrets hidden.
    let shown = text(&out.stdout);
    assert!(
        !shown.contains("l9j_"),
        "a join token was printed:\n{shown}"
    );
    assert!(
        shown.contains("<join token hidden: it is in the file>"),
        "{shown}"
    );
    assert!(shown.contains("agent --join-token-file"), "{shown}");
    assert!(shown.contains(".levers9/machines/"), "{shown}");
    assert!(
        !cp.log().contains(&token),
        "the join token is in the controlplane log"
    );

    let listed = text(&cli(&cp, home.path(), &admin, &["machine", "list"]).stdout);
    assert!(
        listed.contains(&id) && listed.contains("pending"),
        "{listed}"
    );
    let pools = text(&cli(&cp, home.path(), &admin, &["pool", "list"]).stdout);
    assert!(
        pools
            .lines()
            .any(|l| l.contains("boxes") && l.contains("runtime") && l.contains(" 2 ")),
        "{pools}"
    );

    // Only admins make machines; a pool with machines is not deleted.
    let user = text(&cli(&cp, home.path(), &admin, &["token", "create"]).stdout);
    let refused = cli(
        &cp,
        home.path(),
        user.trim(),
        &["machine", "create", "--pool", "boxes"],
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("cannot create machines"),
        "{}",
        text(&refused.stderr)
    );
    let busy = cli(&cp, home.path(), &admin, &["pool", "delete", "boxes"]);
    assert!(
        text(&busy.stderr).contains("still has 2 machine(s)"),
        "{}",
        text(&busy.stderr)
    );
    let unknown = cli(
        &cp,
        home.path(),
        &admin,
        &["machine", "create", "--pool", "nope"],
    );
    assert!(
        text(&unknown.stderr).contains("levers9 pool create nope"),
        "{}",
        text(&unknown.stderr)
    );
}

/// `levers9 agent` with a join token file, expected to fail; its stderr.
fn agent_refused(cp: &Controlplane, token_file: &Path) -> String {
    let dir = tempfile::tempdir().expect("agent dir");
    let out = std::process::Command::new(BIN)
        .arg("agent")
        .arg("--join-token-file")
        .arg(token_file)
        .arg("--credential-file")
        .arg(dir.path().join("credential"))
        .arg("--state-dir")
        .arg(dir.path().join("worker"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(
            "LEVERS9_CONTROLPLANE",
            format!("127.0.0.1:{}", cp.grpc_port),
        )
        .output()
        .expect("run levers9 agent");
    assert!(
        !out.status.success(),
        "the agent joined: {}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("credential").exists());
    text(&out.stderr)
}

#[tokio::test]
async fn a_reused_or_expired_join_token_is_refused_with_what_to_do() {
    let (cp, admin, home) = stack_with_pool().await;
    let (id, file) = create_machine(&cp, home.path(), &admin, &[]);
    let token = join_token_of(&file);
    let token_file = home.path().join("join-token");
    std::fs::write(&token_file, &token).unwrap();

    // Redeemed once…
    let joined = machines(&cp)
        .await
        .join_machine(with_token(
            JoinMachineRequest {
                hostname: "box-1".into(),
                capacity: None,
            },
            &token,
        ))
        .await
        .expect("the first join works")
        .into_inner();
    assert_eq!(joined.machine_id, id);
    assert_eq!(joined.pool, "boxes");
    // …its credential acts as that machine's worker only…
    let other = WorkerServiceClient::new(cp.channel().await)
        .drain_worker(with_token(
            DrainWorkerRequest {
                worker_id: "someone-else".into(),
            },
            &joined.worker_token,
        ))
        .await
        .expect_err("a machine credential cannot drain another worker");
    assert_eq!(other.code(), tonic::Code::PermissionDenied, "{other:?}");
    assert!(
        other
            .message()
            .contains(&format!("may only act as worker {id}")),
        "{other:?}"
    );
    // …and the token never works again.
    let reused = agent_refused(&cp, &token_file);
    assert!(
        reused.contains("join token already used: run `levers9 machine create --pool boxes` again for a new one"),
        "{reused}"
    );

    let (_, short) = create_machine(&cp, home.path(), &admin, &["--ttl", "1s"]);
    std::fs::write(&token_file, join_token_of(&short)).unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let expired = agent_refused(&cp, &token_file);
    assert!(expired.contains("join token expired at"), "{expired}");
    assert!(
        expired.contains("run `levers9 machine create --pool boxes` again for a new one"),
        "{expired}"
    );
    let listed = text(&cli(&cp, home.path(), &admin, &["machine", "list"]).stdout);
    assert!(
        listed.contains("expired") && listed.contains("joined"),
        "{listed}"
    );
    assert!(
        !cp.log().contains(&token),
        "the join token is in the controlplane log"
    );
}

#[tokio::test]
async fn agent_dev_builds_are_refused_when_the_setting_is_off() {
    let cp = Controlplane::start(Backend::Embedded);
    let own = format!(
        "levers9-{}-{}",
        std::env::consts::OS,
        match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => other,
        }
    );
    let http = reqwest::Client::new();
    let dev = http
        .get(cp.http(&format!("/agent/{own}?dev=true")))
        .send()
        .await
        .expect("download");
    assert_eq!(dev.status(), 403);
    let message = dev.text().await.unwrap();
    assert!(
        message.contains(
            "agent dev builds are off on this controlplane: set LEVERS9_AGENT_DEV_BUILDS=true"
        ),
        "{message}"
    );
    // A platform with no prebuilt binary is not built either.
    let other = http
        .get(cp.http("/agent/levers9-plan9-mips"))
        .send()
        .await
        .expect("download");
    assert_eq!(other.status(), 404);
    let message = other.text().await.unwrap();
    assert!(
        message.contains("no prebuilt agent for plan9-mips"),
        "{message}"
    );
    assert!(
        message.contains("LEVERS9_AGENT_DEV_BUILDS=true"),
        "{message}"
    );
    // Its own platform it serves: its own executable, with no token.
    let served = http
        .get(cp.http(&format!("/agent/{own}")))
        .send()
        .await
        .expect("download");
    assert_eq!(served.status(), 200);
    let bytes = served.bytes().await.unwrap();
    assert_eq!(bytes.len() as u64, std::fs::metadata(BIN).unwrap().len());

    // `pool join --dev` stops at the download and says why.
    let admin = cp.admin_token().await;
    let home = tempfile::tempdir().unwrap();
    let out = cli(&cp, home.path(), &admin, &["pool", "create", "boxes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let agent_dir = home.path().join("agent");
    let port = cp.grpc_port.to_string();
    let url = cp.http("/agent");
    let out = cp.cli(
        home.path(),
        &["pool", "join", "boxes", "--dev", "--download-url", &url],
        &[
            ("LEVERS9_TOKEN", admin.as_str()),
            ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
            ("LEVERS9_CONTROLPLANE_PORT", &port),
            ("LEVERS9_AGENT_DIR", agent_dir.to_str().unwrap()),
        ],
        None,
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("agent dev builds are off on this controlplane"),
        "{stderr}"
    );
    assert!(!agent_dir.join("levers9").exists());
}

#[tokio::test]
async fn a_second_host_joins_with_the_join_file_and_runs_a_container() {
    let (cp, admin, home) = stack_with_pool().await;
    let image = busybox_image();
    let registry_port: u16 = std::env::var("LEVERS9_TEST_REGISTRY")
        .expect("LEVERS9_TEST_REGISTRY")
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .expect("the registry has a port");
    let url = cp.http("/agent");
    let (id, file) = create_machine(&cp, home.path(), &admin, &["--download-url", &url]);

    // A run-time pool takes containers before any machine has joined it:
    // this one waits for the box.
    let early = cli(
        &cp,
        home.path(),
        &admin,
        &[
            "container",
            "run",
            &image,
            "--pool",
            "boxes",
            "--detach",
            "--cpu",
            "500m",
            "--memory",
            "64Mi",
            "--",
            "true",
        ],
    );
    assert!(early.status.success(), "{}", text(&early.stderr));

    let mut second = netns::SecondHost::new(&[cp.grpc_port, cp.http_port, registry_port]);
    let box_dir = tempfile::Builder::new()
        .prefix("l9box-")
        .tempdir()
        .expect("box dir");
    let agent_dir = box_dir.path().join("agent");
    let log = box_dir.path().join("join.log");
    second.spawn(
        "sh",
        &[
            file.to_str().unwrap(),
            "--cpu-millicores",
            "1000",
            "--memory-mib",
            "1024",
            "--drain-grace-seconds",
            "1",
        ],
        &[("LEVERS9_AGENT_DIR", agent_dir.to_str().unwrap())],
        box_dir.path(),
        &log,
    );
    let box_log = || std::fs::read_to_string(&log).unwrap_or_default();

    // It downloaded the agent from the controlplane, joined and connected.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let listed = machines(&cp)
            .await
            .list_machines(with_token(ListMachinesRequest {}, &admin))
            .await
            .expect("list machines")
            .into_inner()
            .machines;
        let machine = listed.iter().find(|m| m.machine_id == id).expect("listed");
        if machine.connected {
            assert_eq!(machine.state(), MachineState::Joined);
            assert!(machine
                .capacity
                .as_ref()
                .is_some_and(|c| c.cpu_millicores > 0));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the box never joined (second host {} via {}):\n{}",
            second.name,
            second.host_address(),
            box_log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let downloaded = agent_dir.join("levers9");
    assert_eq!(
        std::fs::metadata(&downloaded)
            .expect("the agent was downloaded")
            .len(),
        std::fs::metadata(BIN).unwrap().len()
    );
    assert!(
        !agent_dir.join("join-token").exists(),
        "the used join token was kept"
    );
    let credential = agent_dir.join("credential");
    assert_eq!(
        std::fs::metadata(&credential).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // The early container is placed on the box as soon as it joins and holds
    // its share until it exits: all of the box is free once it has run.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let workers = text(&cli(&cp, home.path(), &admin, &["worker", "list"]).stdout);
        if workers
            .lines()
            .any(|l| l.contains(&id) && l.contains("boxes") && l.contains("1000m/1000m"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the early container never gave its room back:\n{workers}\n{}",
            box_log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let out = cli(
        &cp,
        home.path(),
        &admin,
        &[
            "container",
            "run",
            &image,
            "--pool",
            "boxes",
            "--cpu",
            "500m",
            "--memory",
            "64Mi",
            "--",
            "sh",
            "-c",
            "echo hello from the box",
        ],
    );
    assert!(out.status.success(), "{}\n{}", text(&out.stderr), box_log());
    assert_eq!(text(&out.stdout), "hello from the box\n");

    // No secret in the box's log or in the process list.
    let logged = box_log();
    assert!(
        !logged.contains("l9j_") && !logged.contains("l9_"),
        "{logged}"
    );
    let cmdline = std::fs::read_to_string(format!("/proc/{}/cmdline", second.last_pid()))
        .expect("the agent runs");
    assert!(cmdline.contains("agent"), "{cmdline}");
    assert!(
        !cmdline.contains("l9j_") && !cmdline.contains("l9_"),
        "{cmdline}"
    );

    // Deleting the machine revokes its credential.
    let out = cli(&cp, home.path(), &admin, &["machine", "delete", &id]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&cli(&cp, home.path(), &admin, &["machine", "list"]).stdout);
    assert!(!listed.contains(&id), "{listed}");
    drop(second);
}

#[tokio::test]
async fn install_systemd_joins_once_and_writes_a_unit_without_a_token() {
    let (cp, admin, home) = stack_with_pool().await;
    let (id, file) = create_machine(&cp, home.path(), &admin, &[]);
    let token = join_token_of(&file);
    let agent_dir = home.path().join("agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    let token_file = agent_dir.join("join-token");
    std::fs::write(&token_file, &token).unwrap();
    let unit_path = home.path().join("systemd/levers9-agent.service");
    let install = || {
        std::process::Command::new(BIN)
            .args(["agent", "--install-systemd", "--systemd-unit"])
            .arg(&unit_path)
            .arg("--join-token-file")
            .arg(&token_file)
            .arg("--state-dir")
            .arg(agent_dir.join("worker"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env(
                "LEVERS9_CONTROLPLANE",
                format!("127.0.0.1:{}", cp.grpc_port),
            )
            .output()
            .expect("run levers9 agent")
    };
    let out = install();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("systemctl enable --now levers9-agent.service"));
    assert!(!token_file.exists(), "the redeemed join token was kept");
    let credential = agent_dir.join("credential");
    assert_eq!(
        std::fs::metadata(&credential).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(std::fs::read_to_string(&credential).unwrap().contains(&id));

    let unit = std::fs::read_to_string(&unit_path).expect("the unit was written");
    assert!(
        unit.contains(&format!(
            "agent --credential-file \"{}\" --state-dir \"{}\"",
            credential.display(),
            agent_dir.join("worker").display()
        )),
        "{unit}"
    );
    assert!(
        unit.contains(&format!(
            "Environment=\"LEVERS9_CONTROLPLANE=127.0.0.1:{}\"",
            cp.grpc_port
        )),
        "{unit}"
    );
    assert!(!unit.contains("l9j_") && !unit.contains("l9_"), "{unit}");
    let logged = text(&out.stderr);
    assert!(
        !logged.contains("l9j_") && !logged.contains("l9_"),
        "{logged}"
    );

    // Run again (a restarted service), it uses the saved credential: no
    // join token is needed any more.
    let again = install();
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        text(&again.stderr).contains("already joined"),
        "{}",
        text(&again.stderr)
    );
    let listed = text(&cli(&cp, home.path(), &admin, &["machine", "list"]).stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.contains(&id) && l.contains("joined")),
        "{listed}"
    );
}
