//! Real containers on runc and runsc. Each check runs on both runtimes
//! (`<check>::runc`, `<check>::runsc`) unless a runtime cannot, as noted.

#[macro_use]
mod common;

use std::time::{Duration, Instant};

use common::{eventually, id, process_gone, run_to_exit, Harness, Kind, LIFE};
use levers9_runtime::{Exit, Resources, SeccompMode, Stream};

on_both!(echo_prints_its_output);
async fn echo_prints_its_output(h: Harness) {
    let (exit, out, err) = run_to_exit(&h, &h.spec("echo", &["echo", "hello"])).await;
    assert_eq!(
        (exit, out.as_str()),
        (Exit::Code(0), "hello\n"),
        "stderr: {err}"
    );
}

on_both!(exit_code_is_reported);
async fn exit_code_is_reported(h: Harness) {
    let spec = h.spec("code", &["sh", "-c", "echo oops >&2; exit 7"]);
    let (exit, _, err) = run_to_exit(&h, &spec).await;
    assert_eq!(exit, Exit::Code(7));
    assert_eq!(err, "oops\n");
}

on_both!(memory_limit_oom_kills_and_is_reported);
/// Writes more than the limit into a tmpfs (its pages are charged to the
/// memory cgroup). runc: the writer is OOM-killed. runsc: the limit has
/// the sandbox's head-room on top, so more is written, and the whole
/// sandbox is OOM-killed; its memory cgroup is ours, so the kill is seen.
async fn memory_limit_oom_kills_and_is_reported(h: Harness) {
    let mib = match h.kind {
        Kind::Runc => 64,
        Kind::Runsc => 400,
    };
    // A single command: sh execs dd, so the container's init is the victim.
    let script = format!("dd if=/dev/zero of=/tmp/fill bs=1M count={mib}");
    let mut spec = h.spec("oom", &["sh", "-c", &script]);
    spec.resources.memory_mib = 32;
    spec.tmp_mib = Some(1024);
    let (exit, out, err) = run_to_exit(&h, &spec).await;
    if h.rt.capabilities().detects_oom {
        assert_eq!(exit, Exit::OomKilled, "stdout: {out} stderr: {err}");
    } else {
        // No readable memory cgroup (runsc on cgroup v2): a plain SIGKILL.
        assert_eq!(exit, Exit::Signal(9), "stdout: {out} stderr: {err}");
    }
}

on_both!(pids_limit_stops_a_fork_bomb);
/// runc: the 21st process cannot be forked and the shell says so.
/// runsc: the limit (plus head-room) bounds the sandbox's host tasks, and on
/// the ptrace platform each sandboxed process costs several (about 5 for a
/// sleeping one); when they run out the Sentry dies: the container ends with
/// code 2 and no message on its stderr (it is in the Sentry's log).
async fn pids_limit_stops_a_fork_bomb(h: Harness) {
    let script = "for i in $(seq 200); do sleep 30 & done; echo all-started";
    let mut spec = h.spec("pids", &["sh", "-c", script]);
    spec.resources.pids = 20;
    let (exit, out, err) = run_to_exit(&h, &spec).await;
    assert!(
        !out.contains("all-started"),
        "exit {exit:?} stdout: {out} stderr: {err}"
    );
    match h.kind {
        Kind::Runc => assert!(err.contains("can't fork"), "exit {exit:?} stderr: {err}"),
        Kind::Runsc => assert_ne!(exit, Exit::Code(0), "stderr: {err}"),
    }
}

on_both!(cpu_quota_is_enforced);
/// A busy loop limited to 500 millicores gets about half a core (measured
/// from the cgroup's CPU time; on runsc that includes the sandbox).
async fn cpu_quota_is_enforced(h: Harness) {
    let mut spec = h.spec("cpu", &["sh", "-c", "while :; do :; done"]);
    spec.resources.cpu_millicores = 500;
    spec.resources.cpu_limit_millicores = 500;
    let c = h.rt.start(&spec).await.expect("start");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (u0, t0) = (
        h.rt.usage(&id("cpu")).await.expect("usage").cpu,
        Instant::now(),
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (u1, t1) = (
        h.rt.usage(&id("cpu")).await.expect("usage").cpu,
        Instant::now(),
    );
    let share = (u1 - u0).as_secs_f64() / (t1 - t0).as_secs_f64();
    h.rt.stop(&id("cpu"), Duration::ZERO).await.expect("stop");
    c.wait().await.expect("exit");
    assert!(share < 0.75, "used {share:.2} of a core with a 0.5 quota");
    assert!(share > 0.05, "used {share:.2} of a core: did it run?");
}

on_both!(env_args_and_cwd_reach_the_process);
async fn env_args_and_cwd_reach_the_process(h: Harness) {
    let script = r#"echo "$FOO|$1|$(pwd)|$(hostname)|$(id -u):$(id -g)""#;
    let mut spec = h.spec("env", &["sh", "-c", script, "sh", "arg one"]);
    spec.env.push(("FOO".into(), "bar baz".into()));
    spec.cwd = "/tmp".into();
    spec.hostname = "fn-host".into();
    spec.uid = 1000;
    spec.gid = 1001;
    let (exit, out, err) = run_to_exit(&h, &spec).await;
    assert_eq!(exit, Exit::Code(0), "stderr: {err}");
    assert_eq!(out, "bar baz|arg one|/tmp|fn-host|1000:1001\n");
}

on_both!(stop_ends_a_running_container);
async fn stop_ends_a_running_container(h: Harness) {
    let c =
        h.rt.start(&h.spec("stop", &["sleep", "100"]))
            .await
            .expect("start");
    let t = Instant::now();
    h.rt.stop(&id("stop"), Duration::from_millis(300))
        .await
        .expect("stop");
    let exit = tokio::time::timeout(LIFE, c.wait())
        .await
        .expect("ends")
        .expect("exit");
    assert!(matches!(exit, Exit::Signal(_)), "{exit:?}");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    // Stopping what is gone is not an error.
    h.rt.stop(&id("stop"), Duration::ZERO)
        .await
        .expect("stop again");
}

on_both!(nothing_is_left_behind_after_exit_and_after_stop);
async fn nothing_is_left_behind_after_exit_and_after_stop(h: Harness) {
    let (exit, _, _) = run_to_exit(&h, &h.spec("done", &["true"])).await;
    assert_eq!(exit, Exit::Code(0));
    assert_eq!(h.leftovers("done"), Vec::<String>::new());

    let c =
        h.rt.start(&h.spec("stopped", &["sleep", "100"]))
            .await
            .expect("start");
    // The check does see a running one, in the runtime's list too.
    let running = h.leftovers("stopped");
    assert!(running.iter().any(|l| l.contains(" list: ")), "{running:?}");
    h.rt.stop(&id("stopped"), Duration::ZERO)
        .await
        .expect("stop");
    c.wait().await.expect("exit");
    assert_eq!(h.leftovers("stopped"), Vec::<String>::new());
    h.rt.cleanup(&id("stopped"))
        .await
        .expect("cleanup is idempotent");
}

on_both!(reap_leftovers_cleans_a_previous_life);
/// A "crashed" worker: the container is started from a tokio runtime that
/// is then dropped, so nobody watches or cleans it; a new instance reaps it.
async fn reap_leftovers_cleans_a_previous_life(h: Harness) {
    let rt = h.another_instance();
    let spec = h.spec("orphan", &["sleep", "100"]);
    let pid = std::thread::spawn(move || {
        let tokio = tokio::runtime::Runtime::new().expect("tokio");
        let c = tokio.block_on(rt.start(&spec)).expect("start");
        c.pid()
        // `tokio` is dropped here, with the task that watched the container.
    })
    .join()
    .expect("thread");
    assert!(!process_gone(pid));
    let reaped = h.another_instance().reap_leftovers().await.expect("reap");
    assert_eq!(reaped, vec![id("orphan")]);
    assert_eq!(h.leftovers("orphan"), Vec::<String>::new());
    assert!(
        eventually(Duration::from_secs(5), || process_gone(pid)).await,
        "pid {pid} gone"
    );
}

on_both!(logs_are_streamed_live);
async fn logs_are_streamed_live(h: Harness) {
    let script = "echo one; sleep 0.3; echo two >&2; sleep 0.3; echo three; sleep 0.3";
    let c =
        h.rt.start(&h.spec("live", &["sh", "-c", script]))
            .await
            .expect("start");
    let (history, mut rx) = c.logs().subscribe();
    let mut seen: Vec<(Stream, String)> = history
        .into_iter()
        .map(|c| (c.stream, String::from_utf8_lossy(&c.data).into_owned()))
        .collect();
    while seen.len() < 2 {
        let chunk = tokio::time::timeout(LIFE, rx.recv())
            .await
            .expect("in time")
            .expect("chunk");
        seen.push((
            chunk.stream,
            String::from_utf8_lossy(&chunk.data).into_owned(),
        ));
    }
    assert_eq!(c.exit().get(), None, "two lines arrived while it still ran");
    assert_eq!(seen[0], (Stream::Stdout, "one\n".to_string()));
    assert_eq!(seen[1], (Stream::Stderr, "two\n".to_string()));
    let third = rx.recv().await.expect("third");
    assert_eq!(third.data, b"three\n");
    assert_eq!(c.wait().await.expect("exit"), Exit::Code(0));
    assert!(rx.recv().await.is_err(), "closed at the end");
}

on_both!(seccomp_default_blocks_a_denied_syscall);
/// `unshare -U` needs no capability (unprivileged user namespaces are
/// allowed), but `unshare` is outside the default allow-list: it works with
/// seccomp off and fails with EPERM under the default profile (runsc: with
/// `--oci-seccomp`, applied by gVisor to the sandboxed process).
async fn seccomp_default_blocks_a_denied_syscall(h: Harness) {
    let script = "unshare -U true && echo allowed || echo denied";
    let mut spec = h.spec("sc-off", &["sh", "-c", script]);
    spec.security.seccomp = SeccompMode::Off;
    let (_, out, err) = run_to_exit(&h, &spec).await;
    assert_eq!(out, "allowed\n", "control without seccomp; stderr: {err}");

    let spec = h.spec("sc-on", &["sh", "-c", script]);
    let (_, out, err) = run_to_exit(&h, &spec).await;
    assert_eq!(out, "denied\n", "stderr: {err}");
    assert!(err.contains("Operation not permitted"), "stderr: {err}");
}

#[tokio::test]
async fn start_failure_reports_the_runtime_error_and_cleans_up() {
    let h = Harness::new(Kind::Runc);
    let mut spec = h.spec("bad", &["/no/such/binary"]);
    spec.resources = Resources {
        cpu_millicores: 100,
        cpu_limit_millicores: 0,
        memory_mib: 16,
        pids: 8,
    };
    match h.rt.start(&spec).await {
        Err(levers9_runtime::RuntimeError::StartFailed { stderr, .. }) => {
            assert!(stderr.contains("no such file"), "{stderr}")
        }
        other => panic!("expected StartFailed, got {other:?}"),
    }
    assert_eq!(h.leftovers("bad"), Vec::<String>::new());
}
