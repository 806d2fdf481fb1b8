//! `levers9 up`: the whole stack on one machine, used through the context it
//! writes, stopped and started again on the same data.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, run_cli, text, BIN};

struct Up {
    child: Child,
    log: std::path::PathBuf,
}

impl Up {
    fn start(
        home: &std::path::Path,
        data: &std::path::Path,
        grpc: u16,
        http: u16,
        name: &str,
    ) -> Up {
        let log = home.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("log");
        let child = Command::new(BIN)
            .args([
                "up",
                "--grpc-port",
                &grpc.to_string(),
                "--http-port",
                &http.to_string(),
            ])
            .arg("--data-dir")
            .arg(data)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home)
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("log"))
            .stderr(file)
            .spawn()
            .expect("spawn levers9 up");
        let mut up = Up { child, log };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !up.log().contains("levers9 is up") {
            if let Ok(Some(status)) = up.child.try_wait() {
                panic!("levers9 up exited with {status}:\n{}", up.log());
            }
            assert!(
                Instant::now() < deadline,
                "not up within 60 s:\n{}",
                up.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        up
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, and the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        self.child.wait().expect("wait")
    }
}

#[test]
fn up_runs_the_stack_and_comes_back_on_the_same_data() {
    let home = tempfile::tempdir().expect("home");
    let data = home.path().join("up");
    let (grpc, http) = (free_port(), free_port());
    let image = common::fleet::busybox_image();

    // The same data twice: the second `up` finds its records and token.
    for (run, greeting) in [("first", "hello from up"), ("second", "again")] {
        let up = Up::start(home.path(), &data, grpc, http, run);
        let out = run_cli(
            home.path(),
            &["container", "run", &image, "--", "echo", greeting],
            &[],
            None,
        );
        assert!(out.status.success(), "{}\n{}", text(&out.stderr), up.log());
        assert_eq!(text(&out.stdout), format!("{greeting}\n"));
        let workers = text(&run_cli(home.path(), &["worker", "list"], &[], None).stdout);
        // The worker process the controlplane keeps in pool default.
        assert!(
            workers
                .lines()
                .any(|l| l.contains("default") && l.contains("ready")),
            "{workers}"
        );
        check_one_admin_token(home.path());
        assert!(up.stop().success(), "{run} up did not stop cleanly");
    }
}

/// Bootstrap ran once: however many times `up` started, one admin token.
fn check_one_admin_token(home: &std::path::Path) {
    let tokens = text(&run_cli(home, &["token", "list"], &[], None).stdout);
    assert_eq!(
        tokens.lines().filter(|l| l.contains(" admin ")).count(),
        1,
        "{tokens}"
    );
}

/// The quickstart path with a built image: `levers9 up` alone builds an
/// image from a spec (on its one worker, pushed to its own storage) and runs
/// a function in it.
#[test]
fn up_builds_images_and_runs_functions_in_them() {
    let python = std::env::var("LEVERS9_TEST_PYTHON").expect("LEVERS9_TEST_PYTHON");
    let home = tempfile::tempdir().expect("home");
    let (grpc, http) = (free_port(), free_port());
    let up = Up::start(home.path(), &home.path().join("up"), grpc, http, "build");
    let app = home.path().join("app.py");
    // The base image of `up` is Python and no shell.
    std::fs::write(
        &app,
        r#"from levers9 import Image, function

IMAGE = Image().add_commands(
    ["python3 -c 'open(\"/etc/levers9-up\", \"w\").write(\"built by up\")'"]
)

@function(image=IMAGE)
def marker():
    return open("/etc/levers9-up").read()
"#,
    )
    .expect("write app");
    let env = [("LEVERS9_PYTHON", python.as_str())];
    let target = |name: &str| format!("{}::{name}", app.display());

    let built = run_cli(
        home.path(),
        &["image", "build", &target("IMAGE")],
        &env,
        None,
    );
    assert!(
        built.status.success(),
        "{}\n{}",
        text(&built.stderr),
        up.log()
    );
    let reference = text(&built.stdout);
    assert!(
        reference.contains(&format!("127.0.0.1:{http}/")),
        "pushed to up's own storage: {reference}"
    );
    let ran = run_cli(home.path(), &["run", &target("marker")], &env, None);
    assert!(ran.status.success(), "{}\n{}", text(&ran.stderr), up.log());
    assert!(
        text(&ran.stdout).contains("built by up"),
        "{}",
        text(&ran.stdout)
    );
    assert!(up.stop().success());
}
