//! What the JuiceFS volume tests share: a metadata Redis with a password,
//! a controlplane with the test image, the juicefs processes of a test and
//! their cleanup, and the functions of tests/volumes/app.py.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::fleet::{python_image, Worker};
use super::{backend_env, free_port, text, Backend, Controlplane, SECRET};

pub fn required(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run the tests with scripts/test-servers.sh (make test)")
    })
}

/// A redis-server of the test's own, with a password, for JuiceFS's
/// metadata; stopped by PID when dropped.
pub struct MetaRedis {
    child: Child,
    port: u16,
    pub password: String,
    _dir: tempfile::TempDir,
}

impl MetaRedis {
    pub fn start() -> MetaRedis {
        let dir = tempfile::tempdir().expect("redis dir");
        let port = free_port();
        let password = format!("meta-pw-{}", std::process::id());
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .args(["--requirepass", &password])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        MetaRedis {
            child,
            port,
            password,
            _dir: dir,
        }
    }

    /// The `LEVERS9_JUICEFS_*` settings of a fresh file system in DB `db`.
    pub fn juicefs_env(&self, db: u32) -> Vec<(String, String)> {
        vec![
            (
                "LEVERS9_JUICEFS_META_URL".into(),
                format!("redis://:{}@127.0.0.1:{}/{db}", self.password, self.port),
            ),
            (
                "LEVERS9_JUICEFS_BUCKET".into(),
                format!(
                    "{}/{}",
                    required("LEVERS9_TEST_S3_ENDPOINT"),
                    required("LEVERS9_TEST_S3_BUCKET")
                ),
            ),
            (
                "LEVERS9_JUICEFS_ACCESS_KEY".into(),
                required("LEVERS9_TEST_S3_ACCESS_KEY_ID"),
            ),
            (
                "LEVERS9_JUICEFS_SECRET_KEY".into(),
                required("LEVERS9_TEST_S3_SECRET_ACCESS_KEY"),
            ),
            (
                "LEVERS9_JUICEFS_BINARY".into(),
                required("LEVERS9_TEST_JUICEFS"),
            ),
            // Its own prefix in the shared bucket.
            (
                "LEVERS9_JUICEFS_NAME".into(),
                format!("l9t-{}-{}-{db}", std::process::id(), self.port),
            ),
        ]
    }
}

impl Drop for MetaRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every process whose command line mentions juicefs and one of `dirs`,
/// with that command line.
pub fn juicefs_processes(dirs: &[&Path]) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc") {
        let entry = entry.expect("entry");
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains("juicefs")
            && dirs.iter().any(|d| cmdline.contains(&*d.to_string_lossy()))
        {
            found.push((pid, cmdline));
        }
    }
    found
}

/// The lines of this process's mount table under `dir`, to show what a
/// failed wait left mounted.
fn mounts_under(dir: &Path) -> String {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let dir = dir.to_string_lossy();
    table
        .lines()
        .filter(|line| line.contains(&*dir))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Unmounts (lazily) and stops whatever juicefs the test left under
/// `dirs`, for a test that failed before its processes stopped cleanly.
pub struct MountCleanup(pub Vec<PathBuf>);

impl Drop for MountCleanup {
    fn drop(&mut self) {
        let dirs: Vec<&Path> = self.0.iter().map(PathBuf::as_path).collect();
        for (pid, _) in juicefs_processes(&dirs) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        for line in mounts.lines() {
            let Some(point) = line.split(' ').nth(1) else {
                continue;
            };
            if dirs
                .iter()
                .any(|d| point.starts_with(&*d.to_string_lossy()))
            {
                let _ = Command::new("umount").args(["-l", point]).status();
            }
        }
    }
}

/// Runs `app.py COMMAND ARGS` with `token`; its JSON answer.
pub fn app(cp: &Controlplane, token: &str, command: &str, args: &str) -> serde_json::Value {
    let python = required("LEVERS9_TEST_PYTHON");
    let home = tempfile::tempdir().expect("home");
    let out = Command::new(python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/volumes/app.py"))
        .args([command, args])
        .env("HOME", home.path())
        .env("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1")
        .env("LEVERS9_CONTROLPLANE_PORT", cp.grpc_port.to_string())
        .env("LEVERS9_TOKEN", token)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run app.py");
    let stdout = text(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|_| {
        panic!(
            "app.py {command} said no JSON:\n{stdout}\n{}",
            text(&out.stderr)
        )
    })
}

pub fn ok(answer: serde_json::Value, logs: &dyn Fn() -> String) -> serde_json::Value {
    match answer.get("ok") {
        Some(value) => value.clone(),
        None => panic!("the call failed: {answer}\n{}", logs()),
    }
}

pub fn cli_ok(cp: &Controlplane, token: &str, args: &[&str]) -> String {
    let out = cp.cli_as(token, args, None);
    assert!(
        out.status.success(),
        "levers9 {args:?} failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

pub fn controlplane(env: Vec<(String, String)>) -> Controlplane {
    let image = python_image();
    let (registry, name) = image.split_once('/').expect("image has a registry");
    let mut all = backend_env(Backend::Servers);
    all.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    all.push(("LEVERS9_BASE_IMAGE_REGISTRY".into(), registry.into()));
    all.push(("LEVERS9_BASE_IMAGE".into(), name.into()));
    all.extend(env);
    Controlplane::start_with(all)
}

/// Writes `hello.txt` ("from a") into the volume `shared` on worker a
/// (pool a) and reads it back on worker b (pool b).
pub fn write_on_a_read_on_b(cp: &Controlplane, token: &str, logs: &dyn Fn() -> String) {
    assert_eq!(
        ok(
            app(cp, token, "write_text", r#"["hello.txt", "from a"]"#),
            logs
        ),
        6
    );
    assert_eq!(
        ok(app(cp, token, "read_text", r#"["hello.txt"]"#), logs),
        "from a"
    );
}

/// Kills (-9) the juicefs daemons of `worker` whose command line has
/// `filter`, then waits until its log says `noticed`.
pub async fn kill_mount_and_wait(worker: &Worker, filter: &str, noticed: &str) {
    let dir = worker.state_dir.path().to_owned();
    let daemons = || -> Vec<String> {
        juicefs_processes(&[dir.as_path()])
            .into_iter()
            .filter(|(_, cmdline)| cmdline.contains(filter))
            .map(|(pid, _)| pid.to_string())
            .collect()
    };
    assert!(!daemons().is_empty(), "no juicefs daemon with {filter:?}");
    // A mount is a supervisor and the daemon it restarts when it dies:
    // both at once, again until neither is left.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pids = daemons();
        if pids.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "juicefs {pids:?} outlive kill -9"
        );
        let _ = Command::new("kill").arg("-9").args(&pids).status();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The worker looks every 5 s, and a stat of a hung mount may take 10 s.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !worker.log().contains(noticed) {
        assert!(
            Instant::now() < deadline,
            "the dead mount went unnoticed:\n{}\njuicefs left: {:?}\nmounts:\n{}",
            worker.log(),
            juicefs_processes(&[dir.as_path()]),
            mounts_under(&dir)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
