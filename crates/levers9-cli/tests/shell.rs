//! `levers9 shell` and `levers9 container exec -t` on real containers, the
//! CLI on a terminal the test opens (a pty whose slave is the CLI's stdio
//! and controlling terminal), typed at as a person would: on runc and on
//! gVisor; and a shell of a deployed function.
// The pty ioctls (nix offers them only as unsafe macros) and the
// pre-exec hook that makes the pty the CLI's controlling terminal.
#![allow(unsafe_code)]

mod common;

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::fleet::{python_image, wait_for_state, Worker};
use common::sdk::controlplane;
use common::stubs::stub_with;
use common::{text, with_token, Backend, Controlplane, BIN};
use levers9_api::v1::{ContainerState, DeployRequest, DeployedFunction, StubConfig};
use nix::pty::{openpty, OpenptyResult, Winsize};

nix::ioctl_write_int_bad!(
    /// `TIOCSCTTY`: the terminal becomes the caller's controlling terminal.
    set_controlling_terminal,
    nix::libc::TIOCSCTTY
);
nix::ioctl_write_ptr_bad!(
    /// `TIOCSWINSZ`: sets the terminal's window size.
    set_window_size,
    nix::libc::TIOCSWINSZ,
    Winsize
);

/// Long enough for an image pull and a container start.
const START: Duration = Duration::from_secs(120);
/// For an answer to something typed.
const ANSWER: Duration = Duration::from_secs(20);

/// The CLI on a terminal of ours: what it showed so far, and a keyboard.
struct Terminal {
    keyboard: std::fs::File,
    shown: Arc<(Mutex<String>, Condvar)>,
    child: Child,
}

impl Terminal {
    /// Runs `levers9 ARGS` against `cp` as `token`, on a fresh terminal of
    /// 30 by 100.
    fn open(cp: &Controlplane, token: &str, args: &[&str]) -> Terminal {
        let size = Winsize {
            ws_row: 30,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let OpenptyResult { master, slave } = openpty(Some(&size), None).expect("openpty");
        let home = tempfile::tempdir().expect("home").keep();
        let stdio = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("dup the slave"));
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("TERM", "xterm")
            .env("LEVERS9_TOKEN", token)
            .env("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1")
            .env("LEVERS9_CONTROLPLANE_PORT", cp.grpc_port.to_string())
            .stdin(stdio(&slave))
            .stdout(stdio(&slave))
            .stderr(stdio(&slave));
        // SAFETY: only setsid(2) and ioctl(2) between fork and exec.
        unsafe {
            command.pre_exec(|| {
                nix::unistd::setsid()?;
                set_controlling_terminal(0, 0)?;
                Ok(())
            });
        }
        let child = command.spawn().expect("spawn levers9");
        drop(command);
        drop(slave);
        let shown = Arc::new((Mutex::new(String::new()), Condvar::new()));
        let mut screen = std::fs::File::from(master.try_clone().expect("dup the master"));
        let writer = Arc::clone(&shown);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends with EIO once the CLI and all it started are gone.
            while let Ok(n) = screen.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let (text, changed) = &*writer;
                text.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
                changed.notify_all();
            }
        });
        Terminal {
            keyboard: std::fs::File::from(master),
            shown,
            child,
        }
    }

    fn text(&self) -> String {
        self.shown.0.lock().unwrap().clone()
    }

    /// Waits until one of `needles` shows; returns the screen.
    fn wait_for_any(&self, needles: &[&str], within: Duration) -> String {
        let (text, changed) = &*self.shown;
        let deadline = Instant::now() + within;
        let mut shown = text.lock().unwrap();
        while !needles.iter().any(|n| shown.contains(n)) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "none of {needles:?} within {within:?}; the screen: {:?}",
                *shown
            );
            shown = changed.wait_timeout(shown, left).unwrap().0;
        }
        shown.clone()
    }

    /// Waits until `needle` shows as output on a line of its own making,
    /// not as the echo of what was typed (which holds it only as an
    /// expression).
    fn wait_for_line(&self, needle: &str, within: Duration) -> String {
        self.wait_for_any(&[&format!("\n{needle}")], within)
    }

    /// Gives our terminal a new size, as a person dragging its window: the
    /// CLI, in its foreground, gets a SIGWINCH.
    fn resize(&self, rows: u16, cols: u16) {
        let size = Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: the master is open and `size` a struct winsize.
        unsafe { set_window_size(self.keyboard.as_raw_fd(), &size) }.expect("TIOCSWINSZ");
    }

    /// Whether our terminal is in its usual mode (the line discipline
    /// edits and echoes), not the raw mode the CLI keeps it in meanwhile.
    fn is_cooked(&self) -> bool {
        use nix::sys::termios::{tcgetattr, LocalFlags};
        let mode = tcgetattr(&self.keyboard).expect("tcgetattr");
        mode.local_flags
            .contains(LocalFlags::ECHO | LocalFlags::ICANON | LocalFlags::ISIG)
    }

    fn type_keys(&mut self, keys: &str) {
        self.keyboard.write_all(keys.as_bytes()).expect("type");
    }

    fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for levers9") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "levers9 still runs after {within:?}; the screen: {:?}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The id in `levers9 shell: container ID (…)`.
fn container_id(screen: &str) -> String {
    let (_, rest) = screen
        .split_once("levers9 shell: container ")
        .unwrap_or_else(|| panic!("no container line: {screen:?}"));
    rest.split_whitespace().next().expect("an id").to_owned()
}

/// A shell in a container of the Python image: ^C interrupts the command
/// in its foreground and the shell lives on; its exit code is the CLI's;
/// its container is stopped after.
async fn shell_on(runtime: &str) -> (Controlplane, String, Worker) {
    let cp = controlplane(Backend::Embedded, &[]);
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", runtime).await;
    let image = python_image();
    let started = Instant::now();
    let mut shell = Terminal::open(&cp, &admin, &["shell", &image]);
    // A prompt: bash's or sh's, as root.
    let screen = shell.wait_for_any(&["# ", "$ "], START);
    let id = container_id(&screen);
    assert!(!shell.is_cooked(), "raw while the shell runs");

    // The image's applets are busybox's, only some of them linked.
    shell.type_keys("busybox sleep 100\r");
    shell.wait_for_any(&["sleep 100\r\n"], ANSWER);
    std::thread::sleep(Duration::from_secs(1));
    shell.type_keys("\x03");
    shell.type_keys("echo after-$((1+1))\r");
    shell.wait_for_line("after-2", ANSWER);

    // The terminal has our size, and follows it.
    shell.type_keys("busybox stty size\r");
    shell.wait_for_line("30 100", ANSWER);
    shell.resize(41, 123);
    shell.type_keys(
        "until [ \"$(busybox stty size)\" = \"41 123\" ]; do busybox sleep 0.1; done; echo re$((1+1))sized\r",
    );
    shell.wait_for_line("re2sized", ANSWER);

    shell.type_keys("[ -t 0 ] && echo on-a-tty-$((2*3)); busybox tty; echo $((6*7)); exit 3\r");
    let screen = shell.wait_for_line("42", ANSWER);
    let status = shell.wait_exit(ANSWER);
    assert_eq!(status.code(), Some(3), "the screen: {screen:?}");
    assert!(shell.is_cooked(), "our terminal's mode is restored");
    assert!(screen.contains("\non-a-tty-6"), "{screen:?}");
    if runtime == "runc" {
        assert!(screen.contains("\n/dev/pts/"), "{screen:?}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "the sleep was not interrupted: {screen:?}"
    );
    // Stopped once the shell ended.
    let ended = wait_for_state(&cp, &admin, &id, "exited", Duration::from_secs(60)).await;
    assert_eq!(ended.state(), ContainerState::Exited);
    (cp, admin, worker)
}

#[tokio::test]
async fn shell_on_a_terminal_job_control_and_exit_code_on_runc() {
    let (cp, admin, _worker) = shell_on("runc").await;
    let image = python_image();

    // A deployed function's shell has its image and environment.
    let config = StubConfig {
        image: image.clone(),
        env: [("GREETING".to_owned(), "hello".to_owned())].into(),
        ..Default::default()
    };
    let stub_id = stub_with(&cp, &admin, "greeter.py", "greet", config).await;
    let deploy = DeployRequest {
        app_name: "greeter".into(),
        functions: vec![DeployedFunction {
            function_name: "greet".into(),
            stub_id,
            schedule: None,
            endpoint: None,
        }],
    };
    cp.functions()
        .await
        .deploy(with_token(deploy, &admin))
        .await
        .expect("deploy");
    let mut shell = Terminal::open(&cp, &admin, &["shell", "greeter/greet"]);
    shell.wait_for_any(&["# ", "$ "], START);
    shell.type_keys("echo $GREETING-$((1+1)); exit\r");
    shell.wait_for_line("hello-2", ANSWER);
    assert_eq!(
        shell.wait_exit(ANSWER).code(),
        Some(0),
        "{:?}",
        shell.text()
    );

    // Without a terminal on stdin, levers9 shell says what to use instead.
    let refused = cp.cli_as(&admin, &["shell", &image], Some("echo hi\n"));
    assert!(!refused.status.success());
    let err = text(&refused.stderr);
    assert!(
        err.contains("not a terminal") && err.contains("container exec -i"),
        "{err}"
    );

    // container exec -t gives the command a terminal; plain exec does not.
    let run = cp.cli_as(
        &admin,
        &[
            "container",
            "run",
            "--detach",
            &image,
            "--",
            "python3",
            "-c",
            "import time; time.sleep(120)",
        ],
        None,
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    let id = text(&run.stdout).trim().to_owned();
    wait_for_state(&cp, &admin, &id, "running", START).await;
    let probe = ["sh", "-c", "test -t 0 && test -t 1 && echo yes || echo no"];
    let mut args = vec!["container", "exec", "-t", &id, "--"];
    args.extend(probe);
    let tty = cp.cli_as(&admin, &args, None);
    assert!(tty.status.success(), "{}", text(&tty.stderr));
    assert_eq!(text(&tty.stdout).trim(), "yes");
    let mut args = vec!["container", "exec", &id, "--"];
    args.extend(probe);
    let plain = cp.cli_as(&admin, &args, None);
    assert_eq!(text(&plain.stdout).trim(), "no", "{}", text(&plain.stderr));
    // -i -t needs our stdin to be a terminal.
    let refused = cp.cli_as(
        &admin,
        &["container", "exec", "-i", "-t", &id, "--", "cat"],
        Some("x"),
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("not a terminal"),
        "{}",
        text(&refused.stderr)
    );
    // And on our terminal, -it runs the command there with its exit code.
    let mut exec = Terminal::open(
        &cp,
        &admin,
        &[
            "container",
            "exec",
            "-it",
            &id,
            "--",
            "sh",
            "-c",
            "read line; echo got-$line; exit 5",
        ],
    );
    std::thread::sleep(Duration::from_secs(2));
    exec.type_keys("it\r");
    exec.wait_for_line("got-it", ANSWER);
    assert_eq!(exec.wait_exit(ANSWER).code(), Some(5), "{:?}", exec.text());
}

#[tokio::test]
async fn shell_on_a_terminal_job_control_and_exit_code_on_gvisor() {
    let (cp, admin, _worker) = shell_on("gvisor").await;

    // A SIGTERM ends the CLI as a signal death would (128+15), with our
    // terminal restored and the container stopped.
    let mut shell = Terminal::open(&cp, &admin, &["shell", &python_image()]);
    let screen = shell.wait_for_any(&["# ", "$ "], START);
    let id = container_id(&screen);
    assert!(!shell.is_cooked());
    let pid = nix::unistd::Pid::from_raw(shell.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("kill");
    assert_eq!(
        shell.wait_exit(ANSWER).code(),
        Some(143),
        "{:?}",
        shell.text()
    );
    assert!(shell.is_cooked(), "our terminal's mode is restored");
    wait_for_state(&cp, &admin, &id, "exited", Duration::from_secs(60)).await;
}
