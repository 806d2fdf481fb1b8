//! Commands exec'd into running containers, on runc and runsc.

#[macro_use]
mod common;

use std::time::Duration;

use common::{id, Harness, Kind, LIFE};
use levers9_runtime::{ExecProcess, ExecSpec, RuntimeError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn exec_spec(args: &[&str]) -> ExecSpec {
    ExecSpec {
        args: args.iter().map(|a| a.to_string()).collect(),
        ..ExecSpec::default()
    }
}

/// Reads both pipes to the end and waits: (code, stdout, stderr).
async fn finish(mut p: ExecProcess) -> (i32, String, String) {
    let mut out = String::new();
    let mut err = String::new();
    let mut stdout = p.stdout.take().expect("stdout");
    let mut stderr = p.stderr.take().expect("stderr");
    let (a, b) = tokio::join!(
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err)
    );
    a.expect("read stdout");
    b.expect("read stderr");
    let code = tokio::time::timeout(LIFE, p.wait())
        .await
        .expect("exec ends")
        .expect("exit code");
    (code, out, err)
}

on_both!(exec_runs_in_the_container_with_env_cwd_and_exit_code);
async fn exec_runs_in_the_container_with_env_cwd_and_exit_code(h: Harness) {
    let mut spec = h.spec("exec", &["sleep", "60"]);
    spec.env.push(("FROM_SPEC".into(), "spec".into()));
    let _c = h.rt.start(&spec).await.expect("start");
    // Files the container wrote are seen by the exec: same filesystem.
    let mut first = exec_spec(&["sh", "-c", "echo hi > /tmp/mark; echo $FROM_SPEC"]);
    first.cwd = Some("/tmp".into());
    let (code, out, err) = finish(h.rt.exec(&id("exec"), &first).await.expect("exec")).await;
    assert_eq!((code, out.as_str()), (0, "spec\n"), "stderr: {err}");

    let mut second = exec_spec(&[
        "sh",
        "-c",
        "cat mark; echo $EXTRA; pwd; echo oops >&2; exit 3",
    ]);
    second.env.push(("EXTRA".into(), "extra value".into()));
    second.cwd = Some("/tmp".into());
    let (code, out, err) = finish(h.rt.exec(&id("exec"), &second).await.expect("exec")).await;
    assert_eq!(code, 3, "stdout: {out} stderr: {err}");
    assert_eq!(out, "hi\nextra value\n/tmp\n");
    assert!(err.contains("oops"), "stderr: {err}");
    h.rt.stop(&id("exec"), Duration::ZERO).await.expect("stop");
}

on_both!(exec_stdin_reaches_the_command);
async fn exec_stdin_reaches_the_command(h: Harness) {
    let _c =
        h.rt.start(&h.spec("stdin", &["sleep", "60"]))
            .await
            .expect("start");
    let mut p =
        h.rt.exec(&id("stdin"), &exec_spec(&["wc", "-c"]))
            .await
            .expect("exec");
    let mut stdin = p.stdin.take().expect("stdin");
    // More than a pipe holds: the writer waits for the command to read.
    let chunk = vec![b'x'; 64 << 10];
    for _ in 0..16 {
        stdin.write_all(&chunk).await.expect("write stdin");
    }
    drop(stdin);
    let (code, out, err) = finish(p).await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out.trim(), (16 * (64 << 10)).to_string());
    h.rt.stop(&id("stdin"), Duration::ZERO).await.expect("stop");
}

on_both!(exec_in_a_container_that_is_not_running_is_refused);
async fn exec_in_a_container_that_is_not_running_is_refused(h: Harness) {
    match h.rt.exec(&id("never-started"), &exec_spec(&["true"])).await {
        Err(RuntimeError::NotRunning(id)) => assert_eq!(id, "never-started"),
        other => panic!("expected NotRunning, got {other:?}"),
    }
    let c =
        h.rt.start(&h.spec("ended", &["true"]))
            .await
            .expect("start");
    tokio::time::timeout(LIFE, c.wait())
        .await
        .expect("ends")
        .expect("exit");
    let refused = h.rt.exec(&id("ended"), &exec_spec(&["true"])).await;
    assert!(
        matches!(refused, Err(RuntimeError::NotRunning(_))),
        "{refused:?}"
    );
}

on_both!(killing_an_exec_ends_the_command);
async fn killing_an_exec_ends_the_command(h: Harness) {
    let _c =
        h.rt.start(&h.spec("kill", &["sleep", "60"]))
            .await
            .expect("start");
    let mut p =
        h.rt.exec(
            &id("kill"),
            &exec_spec(&["sh", "-c", "echo started; exec sleep 50"]),
        )
        .await
        .expect("exec");
    // Killed once it runs, not while the runtime still starts it.
    let mut started = [0u8; 8];
    let stdout = p.stdout.as_mut().expect("stdout");
    tokio::time::timeout(LIFE, stdout.read_exact(&mut started))
        .await
        .expect("the command started in time")
        .expect("read stdout");
    assert_eq!(&started, b"started\n");
    tokio::time::timeout(LIFE, p.kill())
        .await
        .expect("kill in time");
    let code = tokio::time::timeout(LIFE, p.wait())
        .await
        .expect("ends")
        .expect("code");
    assert_ne!(code, 0);
    // runc forwards the SIGTERM to the command: only the container's own
    // sleep is left. runsc's exec does not forward it: the command runs
    // on until its container ends (docs/sandboxes.md says so).
    if h.kind == Kind::Runsc {
        h.rt.stop(&id("kill"), Duration::ZERO).await.expect("stop");
        return;
    }
    let (code, out, _) = finish(
        h.rt.exec(&id("kill"), &exec_spec(&["ps"]))
            .await
            .expect("ps"),
    )
    .await;
    assert_eq!(code, 0);
    let sleeps = out.lines().filter(|l| l.contains("sleep 50")).count();
    assert_eq!(sleeps, 0, "{out}");
    h.rt.stop(&id("kill"), Duration::ZERO).await.expect("stop");
}

on_both!(exec_with_a_terminal_runs_on_it_and_follows_its_size);
async fn exec_with_a_terminal_runs_on_it_and_follows_its_size(h: Harness) {
    use levers9_runtime::WindowSize;
    let _c =
        h.rt.start(&h.spec("tty", &["sleep", "60"]))
            .await
            .expect("start");
    let mut spec = exec_spec(&["sh"]);
    spec.tty = Some(WindowSize::new(30, 100));
    let mut p = h.rt.exec(&id("tty"), &spec).await.expect("exec");
    assert!(p.stdout.is_none() && p.stdin.is_none());
    let mut screen = Screen::new(p.terminal.take().expect("a terminal"));
    screen
        .type_line("[ -t 0 ] && [ -t 1 ] && echo IS-A-$((1))TTY; tty; echo $((6*7))")
        .await;
    screen.wait_for("42").await;
    assert!(screen.text().contains("IS-A-1TTY"), "{}", screen.text());
    // On gVisor the terminal is ours, passed in: it has no name under
    // /dev/pts in the sandbox, and `tty` says "not a tty".
    if h.kind == Kind::Runc {
        assert!(screen.text().contains("/dev/pts/"), "{}", screen.text());
    }
    // runc copies our terminal's size to the one it makes in the container
    // once the command runs, so the first `stty size` may come before it
    // (seen under CI load: stty failed once): ask until the size is there.
    screen
        .type_line(
            "until [ \"$(stty size)\" = \"30 100\" ]; do sleep 0.1; done; echo SI$((1+1))ZED",
        )
        .await;
    screen.wait_for("SI2ZED").await;
    screen
        .terminal
        .resize(WindowSize::new(41, 123))
        .expect("resize");
    // The runtime applies a resize when its SIGWINCH arrives: ask until
    // the command sees it.
    screen
        .type_line(
            "until [ \"$(stty size)\" = \"41 123\" ]; do sleep 0.1; done; echo RE$((1+1))SIZED",
        )
        .await;
    screen.wait_for("RE2SIZED").await;
    screen.type_line("exit 4").await;
    let code = tokio::time::timeout(LIFE, p.wait())
        .await
        .expect("exec ends")
        .expect("exit code");
    assert_eq!(code, 4, "{}", screen.text());
    h.rt.stop(&id("tty"), Duration::ZERO).await.expect("stop");
}

/// What a terminal showed so far, and a keyboard.
struct Screen {
    terminal: levers9_runtime::Terminal,
    shown: tokio::sync::watch::Receiver<String>,
}

impl Screen {
    fn new(terminal: levers9_runtime::Terminal) -> Self {
        let (tx, shown) = tokio::sync::watch::channel(String::new());
        let mut output = terminal.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = output.read(&mut buf).await {
                if n == 0 {
                    return;
                }
                tx.send_modify(|s| s.push_str(&String::from_utf8_lossy(&buf[..n])));
            }
        });
        Screen { terminal, shown }
    }

    fn text(&self) -> String {
        self.shown.borrow().clone()
    }

    async fn type_line(&mut self, line: &str) {
        let line = format!("{line}\r");
        self.terminal
            .write_all(line.as_bytes())
            .await
            .expect("type");
    }

    /// Waits until `needle` shows up as output, not as the echo of what
    /// was typed (which holds it only quoted or as an expression).
    async fn wait_for(&mut self, needle: &str) {
        let wanted = format!("\n{needle}");
        let seen = tokio::time::timeout(LIFE, self.shown.wait_for(|s| s.contains(&wanted)))
            .await
            .is_ok();
        assert!(seen, "no {needle:?} within {LIFE:?}: {:?}", self.text());
    }
}
