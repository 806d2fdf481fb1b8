//! The security profile on real containers: what the hardened profile
//! refuses, seccomp observe against enforce, the user namespace, and that
//! the default profile is what containers always had.
//!
//! The checks run a static probe (built here with `cc`) that makes each
//! raw syscall and prints `<what> ok` or `<what> <errno name>`, so a
//! refusal is told apart from a missing tool.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use common::{eventually, id, run_to_exit, Harness, Kind};
use levers9_runtime::{
    CapabilitySet, ContainerSpec, Exit, SeccompMode, SecurityProfile, USER_NAMESPACE_HOST_ID,
};

const PROBE_C: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void report(const char *what, long rc) {
    if (rc < 0) printf("%s %s\n", what, strerrorname_np(errno));
    else printf("%s ok\n", what);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (!strcmp(w, "mount")) {
            report(w, mount("none", "/tmp", "tmpfs", 0, NULL));
        } else if (!strcmp(w, "module")) {
            static const char not_elf[64];
            report(w, syscall(SYS_init_module, not_elf, sizeof not_elf, ""));
        } else if (!strcmp(w, "ptrace")) {
            pid_t child = fork();
            if (child == 0) { pause(); _exit(0); }
            report(w, ptrace(PTRACE_ATTACH, child, NULL, NULL));
            kill(child, SIGKILL);
            waitpid(child, NULL, 0);
        } else if (!strcmp(w, "hostname")) {
            report(w, sethostname("probe", 5));
        } else if (!strcmp(w, "write-root")) {
            report(w, open("/probe-wrote-here", O_CREAT | O_WRONLY, 0644));
        } else if (!strcmp(w, "write-tmp")) {
            report(w, open("/tmp/probe-wrote-here", O_CREAT | O_WRONLY, 0644));
        } else if (!strcmp(w, "sync")) {
            report(w, syscall(SYS_sync));
        } else if (!strcmp(w, "int80")) {
#if defined(__x86_64__)
            long rc;
            /* getpid (20) through the 32-bit ABI's entry point. */
            __asm__ volatile("int $0x80" : "=a"(rc) : "a"(20L) : "memory");
            report(w, rc < 0 ? (errno = -rc, -1) : rc);
#endif
        } else if (!strcmp(w, "sleep")) {
            sleep(30);
        }
    }
    fflush(stdout);
    return 0;
}
"#;

/// The probe, built once per test binary.
fn probe() -> &'static Path {
    static PROBE: OnceLock<PathBuf> = OnceLock::new();
    PROBE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("levers9-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("probe dir");
        let source = dir.join("probe.c");
        std::fs::write(&source, PROBE_C).expect("probe source");
        let binary = dir.join("probe");
        let status = std::process::Command::new("cc")
            .args(["-static", "-O1", "-o"])
            .arg(&binary)
            .arg(&source)
            .status()
            .expect("cc runs (scripts/install-test-packages.sh installs it)");
        assert!(status.success(), "the probe compiles");
        binary
    })
}

/// A spec running the probe with `checks` under `security`.
fn probe_spec(h: &Harness, id: &str, security: SecurityProfile, checks: &[&str]) -> ContainerSpec {
    let mut args = vec!["/bin/probe"];
    args.extend(checks);
    let spec = h.spec(id, &args);
    std::fs::copy(probe(), spec.rootfs.join("bin/probe")).expect("copy the probe");
    ContainerSpec { security, ..spec }
}

async fn probe_output(h: &Harness, spec: &ContainerSpec) -> String {
    let (exit, out, err) = run_to_exit(h, spec).await;
    assert_eq!(exit, Exit::Code(0), "stdout: {out} stderr: {err}");
    out
}

const DANGEROUS: &[&str] = &["mount", "module", "ptrace", "hostname", "write-root"];

on_both!(the_hardened_profile_refuses_mount_module_ptrace_hostname_and_root_writes);
async fn the_hardened_profile_refuses_mount_module_ptrace_hostname_and_root_writes(h: Harness) {
    let spec = probe_spec(&h, "hard", SecurityProfile::hardened(), DANGEROUS);
    let out = probe_output(&h, &spec).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), DANGEROUS.len(), "{out}");
    for (what, line) in DANGEROUS.iter().zip(&lines) {
        assert!(line.starts_with(what), "{out}");
        assert!(!line.ends_with(" ok"), "{what} was allowed: {out}");
    }
    assert_eq!(lines[4], "write-root EROFS", "{out}");

    let spec = probe_spec(&h, "hard-tmp", SecurityProfile::hardened(), &["write-tmp"]);
    assert_eq!(
        probe_output(&h, &spec).await,
        "write-tmp ok\n",
        "a read-only root keeps a writable /tmp"
    );
}

on_both!(seccomp_observe_allows_and_enforce_refuses_with_eperm);
/// `sync` is allowed by the baseline and refused by the hardened rules.
/// On runc, observe logs it to the kernel log (`SCMP_ACT_LOG`, an audit
/// record of type 1326 naming the probe); gVisor cannot log to the host,
/// so there observe is the baseline.
async fn seccomp_observe_allows_and_enforce_refuses_with_eperm(h: Harness) {
    let observe = SecurityProfile {
        seccomp: SeccompMode::Observe,
        ..SecurityProfile::default()
    };
    let spec = probe_spec(&h, "sc-observe", observe, &["sync"]);
    assert_eq!(probe_output(&h, &spec).await, "sync ok\n");
    if h.kind == Kind::Runc {
        let logged = eventually(Duration::from_secs(5), || {
            kernel_log().lines().any(|l| {
                l.contains("type=1326") && l.contains("comm=\"probe\"") && l.contains(SYNC_NR)
            })
        })
        .await;
        assert!(logged, "the kernel logged the observed call");
    }

    let enforce = SecurityProfile {
        seccomp: SeccompMode::Enforce,
        ..SecurityProfile::default()
    };
    let spec = probe_spec(&h, "sc-enforce", enforce, &["sync"]);
    assert_eq!(probe_output(&h, &spec).await, "sync EPERM\n");
}

/// `syscall=<nr>` of `sync` in an audit record.
#[cfg(target_arch = "x86_64")]
const SYNC_NR: &str = "syscall=162 ";
#[cfg(target_arch = "aarch64")]
const SYNC_NR: &str = "syscall=81 ";

fn kernel_log() -> String {
    let out = std::process::Command::new("dmesg")
        .output()
        .expect("dmesg runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

on_both!(the_default_profile_is_what_containers_always_had);
/// Three capabilities, no new privileges, the baseline filter (mount and
/// ptrace refused, sync allowed), a writable root; and the profile workers
/// ship with (seccomp observing) behaves the same.
async fn the_default_profile_is_what_containers_always_had(h: Harness) {
    let mut checks = DANGEROUS.to_vec();
    checks.push("sync");
    let spec = probe_spec(&h, "default", SecurityProfile::default(), &checks);
    let out = probe_output(&h, &spec).await;
    for refused in ["mount EPERM", "ptrace EPERM", "hostname EPERM"] {
        assert!(out.contains(refused), "{refused}: {out}");
    }
    assert!(out.contains("write-root ok"), "{out}");
    assert!(out.contains("sync ok"), "{out}");
    assert!(!out.contains("module ok"), "{out}");

    // What workers ship with: the same, seccomp observing.
    let shipped = SecurityProfile {
        seccomp: SeccompMode::Observe,
        ..SecurityProfile::default()
    };
    let spec = probe_spec(&h, "shipped", shipped, &checks);
    assert_eq!(
        probe_output(&h, &spec).await,
        out,
        "the shipped profile changes nothing"
    );

    let spec = h.spec("default-status", &["cat", "/proc/self/status"]);
    let (_, status, _) = run_to_exit(&h, &spec).await;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or("")
            .to_owned()
    };
    // CAP_KILL (5), CAP_NET_BIND_SERVICE (10), CAP_AUDIT_WRITE (29).
    assert_eq!(field("CapBnd:"), "0000000020000420", "{status}");
    // gVisor's /proc shows neither.
    if h.kind == Kind::Runc {
        assert_eq!(field("NoNewPrivs:"), "1", "{status}");
        assert_eq!(field("Seccomp:"), "2", "filtered: {status}");
    }
}

/// The filter names only the native architecture: a system call through
/// the 32-bit entry point kills the process (SIGSYS) whatever the mode,
/// where a container without a filter makes it.
#[cfg(target_arch = "x86_64")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_32_bit_system_call_kills_the_process() {
    let h = Harness::new(Kind::Runc);
    let unfiltered = SecurityProfile {
        seccomp: SeccompMode::Off,
        ..SecurityProfile::default()
    };
    let spec = probe_spec(&h, "int80-off", unfiltered, &["int80"]);
    assert_eq!(probe_output(&h, &spec).await, "int80 ok\n");
    for (id, seccomp) in [
        ("int80-default", SeccompMode::Default),
        ("int80-observe", SeccompMode::Observe),
        ("int80-enforce", SeccompMode::Enforce),
    ] {
        let security = SecurityProfile {
            seccomp,
            ..SecurityProfile::default()
        };
        let spec = probe_spec(&h, id, security, &["int80"]);
        let (exit, out, err) = run_to_exit(&h, &spec).await;
        assert_eq!(
            exit,
            Exit::Signal(31),
            "{seccomp:?}: stdout: {out} stderr: {err}"
        );
        assert_eq!(out, "", "{seccomp:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minimal_capabilities_leave_the_process_none() {
    let h = Harness::new(Kind::Runc);
    let mut spec = h.spec("caps", &["cat", "/proc/self/status"]);
    spec.security.capabilities = CapabilitySet::Minimal;
    let (_, status, _) = run_to_exit(&h, &spec).await;
    assert!(status.contains("CapBnd:\t0000000000000000"), "{status}");
    assert!(status.contains("CapEff:\t0000000000000000"), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_namespace_maps_container_root_to_an_unprivileged_host_uid() {
    use std::os::unix::fs::PermissionsExt;

    let h = Harness::new(Kind::Runc);
    let mut spec = h.spec("userns", &["sh", "-c", "id -u; sleep 30"]);
    spec.security.user_namespace = true;
    // The mapped root has to reach its root filesystem, as image layers
    // (world-readable) let it; a temp dir is private to host root.
    std::fs::set_permissions(h.dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let c = h.rt.start(&spec).await.expect("start");
    let uid_line = || {
        std::fs::read_to_string(format!("/proc/{}/status", c.pid()))
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .map(str::to_owned)
            .unwrap_or_default()
    };
    let host_uid = USER_NAMESPACE_HOST_ID.to_string();
    assert!(
        eventually(Duration::from_secs(5), || uid_line()
            .split_whitespace()
            .nth(1)
            == Some(host_uid.as_str()))
        .await,
        "host view: {}",
        uid_line()
    );
    assert!(
        eventually(Duration::from_secs(5), || c
            .logs()
            .text(levers9_runtime::Stream::Stdout)
            == "0\n")
        .await,
        "container view: {:?}",
        c.logs().text(levers9_runtime::Stream::Stdout)
    );
    h.rt.stop(&id("userns"), Duration::from_secs(1))
        .await
        .expect("stop");
}
