//! The seccomp profiles: the baseline (deny by default with EPERM, allow a
//! list) that every container has always had, and the hardened rules that
//! [`SeccompMode::Observe`] logs and [`SeccompMode::Enforce`] refuses.
//!
//! Origin: containerd's `contrib/seccomp/seccomp_default.go` (itself derived
//! from Moby/Docker's `profiles/seccomp/default.json`), specialised to the
//! capabilities our containers get (only `CAP_AUDIT_WRITE`, `CAP_KILL`,
//! `CAP_NET_BIND_SERVICE`, so none of the capability-gated groups such as
//! `mount`/`unshare`/`setns`/`ptrace`/`bpf`/`reboot` are allowed), plus the
//! newer syscalls later Docker releases allow (`rseq`, `close_range`,
//! `pidfd_*`, ...). Like Docker it answers `clone3` with ENOSYS, so libc falls
//! back to `clone`, whose flags can be filtered (no new namespaces).
//!
//! Names the kernel or libseccomp do not know are skipped by runc, so the
//! list can include syscalls of other architectures and newer kernels.

use oci_spec::runtime::{
    Arch, LinuxSeccomp, LinuxSeccompAction, LinuxSeccompArgBuilder, LinuxSeccompBuilder,
    LinuxSeccompOperator, LinuxSyscall, LinuxSyscallBuilder,
};
use oci_spec::OciSpecError;

use crate::security::SeccompMode;

/// errno returned for a denied syscall (EPERM, as Docker does).
const EPERM: u32 = 1;
/// errno for `clone3`, so that libc falls back to `clone`.
const ENOSYS: u32 = 38;

/// Namespace flags a container may not pass to `clone` (it has no
/// `CAP_SYS_ADMIN`, and new namespaces are the usual first step of an escape).
const CLONE_NAMESPACE_FLAGS: u64 = 0x0002_0000 // CLONE_NEWNS
    | 0x0400_0000 // CLONE_NEWUTS
    | 0x0800_0000 // CLONE_NEWIPC
    | 0x1000_0000 // CLONE_NEWUSER
    | 0x2000_0000 // CLONE_NEWPID
    | 0x4000_0000 // CLONE_NEWNET
    | 0x0200_0000; // CLONE_NEWCGROUP

/// `personality` values allowed (as Docker): PER_LINUX, PER_LINUX32,
/// UNAME26, PER_LINUX32|UNAME26, and the query 0xffffffff.
const PERSONALITIES: [u64; 5] = [0x0, 0x8, 0x20000, 0x20008, 0xffff_ffff];

/// Syscalls allowed without conditions.
#[rustfmt::skip]
const ALLOWED: &[&str] = &[
    "accept", "accept4", "access", "alarm", "bind", "brk", "capget", "capset", "chdir", "chmod",
    "chown", "chown32", "clock_adjtime", "clock_adjtime64", "clock_getres", "clock_getres_time64",
    "clock_gettime", "clock_gettime64", "clock_nanosleep", "clock_nanosleep_time64", "close",
    "close_range", "connect", "copy_file_range", "creat", "dup", "dup2", "dup3", "epoll_create",
    "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait", "epoll_pwait2", "epoll_wait",
    "epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat", "exit", "exit_group",
    "faccessat", "faccessat2", "fadvise64", "fadvise64_64", "fallocate", "fanotify_mark", "fchdir",
    "fchmod", "fchmodat", "fchmodat2", "fchown", "fchown32", "fchownat", "fcntl", "fcntl64",
    "fdatasync", "fgetxattr", "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat",
    "fstat64", "fstatat64", "fstatfs", "fstatfs64", "fsync", "ftruncate", "ftruncate64", "futex",
    "futex_requeue", "futex_time64", "futex_wait", "futex_waitv", "futex_wake", "futimesat",
    "getcpu", "getcwd", "getdents", "getdents64", "getegid", "getegid32", "geteuid", "geteuid32",
    "getgid", "getgid32", "getgroups", "getgroups32", "getitimer", "getpeername", "getpgid",
    "getpgrp", "getpid", "getppid", "getpriority", "getrandom", "getresgid", "getresgid32",
    "getresuid", "getresuid32", "getrlimit", "get_robust_list", "getrusage", "getsid",
    "getsockname", "getsockopt", "get_thread_area", "gettid", "gettimeofday", "getuid", "getuid32",
    "getxattr", "inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch",
    "io_cancel", "ioctl", "io_destroy", "io_getevents", "io_pgetevents", "io_pgetevents_time64",
    "ioprio_get", "ioprio_set", "io_setup", "io_submit", "ipc", "kill", "landlock_add_rule",
    "landlock_create_ruleset", "landlock_restrict_self", "lchown", "lchown32", "lgetxattr", "link",
    "linkat", "listen", "listxattr", "llistxattr", "_llseek", "lremovexattr", "lseek", "lsetxattr",
    "lstat", "lstat64", "madvise", "membarrier", "memfd_create", "mincore", "mkdir", "mkdirat",
    "mknod", "mknodat", "mlock", "mlock2", "mlockall", "mmap", "mmap2", "mprotect",
    "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive", "mq_timedreceive_time64",
    "mq_timedsend", "mq_timedsend_time64", "mq_unlink", "mremap", "msgctl", "msgget", "msgrcv",
    "msgsnd", "msync", "munlock", "munlockall", "munmap", "nanosleep", "newfstatat", "_newselect",
    "open", "openat", "openat2", "pause", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2",
    "pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll", "ppoll_time64", "prctl",
    "pread64", "preadv", "preadv2", "prlimit64", "process_mrelease", "pselect6", "pselect6_time64",
    "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat", "readv",
    "recv", "recvfrom", "recvmmsg", "recvmmsg_time64", "recvmsg", "remap_file_pages",
    "removexattr", "rename", "renameat", "renameat2", "restart_syscall", "rmdir", "rseq",
    "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn",
    "rt_sigsuspend", "rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_tgsigqueueinfo",
    "sched_getaffinity", "sched_getattr", "sched_getparam", "sched_get_priority_max",
    "sched_get_priority_min", "sched_getscheduler", "sched_rr_get_interval",
    "sched_rr_get_interval_time64", "sched_setaffinity", "sched_setattr", "sched_setparam",
    "sched_setscheduler", "sched_yield", "seccomp", "select", "semctl", "semget", "semop",
    "semtimedop", "semtimedop_time64", "send", "sendfile", "sendfile64", "sendmmsg", "sendmsg",
    "sendto", "setfsgid", "setfsgid32", "setfsuid", "setfsuid32", "setgid", "setgid32",
    "setgroups", "setgroups32", "setitimer", "setpgid", "setpriority", "setregid", "setregid32",
    "setresgid", "setresgid32", "setresuid", "setresuid32", "setreuid", "setreuid32", "setrlimit",
    "set_robust_list", "setsid", "setsockopt", "set_thread_area", "set_tid_address", "setuid",
    "setuid32", "setxattr", "shmat", "shmctl", "shmdt", "shmget", "shutdown", "sigaltstack",
    "signalfd", "signalfd4", "sigprocmask", "sigreturn", "socket", "socketcall", "socketpair",
    "splice", "stat", "stat64", "statfs", "statfs64", "statx", "symlink", "symlinkat", "sync",
    "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create",
    "timer_delete", "timer_getoverrun", "timer_gettime", "timer_gettime64", "timer_settime",
    "timer_settime64", "timerfd_create", "timerfd_gettime", "timerfd_gettime64", "timerfd_settime",
    "timerfd_settime64", "times", "tkill", "truncate", "truncate64", "ugetrlimit", "umask",
    "uname", "unlink", "unlinkat", "utime", "utimensat", "utimensat_time64", "utimes", "vfork",
    "vmsplice", "wait4", "waitid", "waitpid", "write", "writev",
];

/// Syscalls of the baseline allow-list that the hardened profile refuses.
/// Each is rare in real workloads and useful to an attacker or a noisy
/// neighbour:
/// - `sync`, `syncfs`: write back every dirty page of the host's
///   filesystems (the overlay's upper layer is the host's), stalling the
///   I/O of every other container on the machine;
/// - `mincore`: page-cache residency, the side channel of CVE-2019-5489
///   against other tenants sharing files;
/// - `remap_file_pages`: deprecated and emulated since Linux 3.16;
/// - `vmsplice`: behind several page-cache corruption exploits, unused by
///   ordinary Python programs;
/// - `fanotify_mark`, `epoll_ctl_old`, `epoll_wait_old`: useless without
///   `fanotify_init` (never allowed) or obsolete.
pub(crate) const HARDENED_DENIED: &[&str] = &[
    "sync",
    "syncfs",
    "mincore",
    "remap_file_pages",
    "vmsplice",
    "fanotify_mark",
    "epoll_ctl_old",
    "epoll_wait_old",
];

/// Architecture-specific syscalls allowed on this build's architecture.
#[cfg(target_arch = "x86_64")]
const ALLOWED_ARCH: &[&str] = &["arch_prctl", "modify_ldt"];
#[cfg(target_arch = "aarch64")]
const ALLOWED_ARCH: &[&str] = &[
    "arm_fadvise64_64",
    "arm_sync_file_range",
    "breakpoint",
    "cacheflush",
    "set_tls",
];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ALLOWED_ARCH: &[&str] = &[];

/// The architectures the filter applies to: the native one only. A system
/// call through a 32-bit ABI (x86's `int 0x80`, x32, 32-bit Arm) matches no
/// architecture of the filter, and the kernel kills the calling thread
/// with SIGSYS: the compatibility entry points are a classic way into the
/// kernel, gVisor runs no 32-bit programs either, and naming those ABIs
/// too tripled the filter runc compiles at every container start (14-17 ms
/// of runc's create on a 2-core machine; docs/benchmarks.md).
fn architectures() -> Vec<Arch> {
    if cfg!(target_arch = "x86_64") {
        vec![Arch::ScmpArchX86_64]
    } else if cfg!(target_arch = "aarch64") {
        vec![Arch::ScmpArchAarch64]
    } else {
        vec![Arch::ScmpArchNative]
    }
}

fn allow(names: &[&str]) -> Result<LinuxSyscall, OciSpecError> {
    LinuxSyscallBuilder::default()
        .names(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
        .action(LinuxSeccompAction::ScmpActAllow)
        .build()
}

/// The profile of `mode`; `None` for [`SeccompMode::Off`]. `sandboxed`:
/// the profile is applied by gVisor's Sentry, which implements no `clone3`
/// of its own (libc gets ENOSYS from it and falls back to `clone`) and, in
/// the runsc we run on, ignores `errnoRet`: answering `clone3` with an
/// errno there would answer EPERM, and no thread could start. The Sentry
/// cannot report `SCMP_ACT_LOG` to the host either, so observing adds
/// nothing there.
pub(crate) fn profile(
    mode: SeccompMode,
    sandboxed: bool,
) -> Result<Option<LinuxSeccomp>, OciSpecError> {
    let hardened = match mode {
        SeccompMode::Off => return Ok(None),
        SeccompMode::Default => None,
        SeccompMode::Observe if sandboxed => None,
        SeccompMode::Observe => Some(LinuxSeccompAction::ScmpActLog),
        SeccompMode::Enforce => Some(LinuxSeccompAction::ScmpActErrno),
    };
    let allowed: Vec<&str> = match hardened {
        // libseccomp refuses a filter naming one syscall twice, so the
        // hardened ones leave the allow-list when they get their own rule.
        Some(_) => ALLOWED
            .iter()
            .copied()
            .filter(|name| !HARDENED_DENIED.contains(name))
            .collect(),
        None => ALLOWED.to_vec(),
    };
    let mut syscalls = vec![allow(&allowed)?, allow(ALLOWED_ARCH)?];
    if let Some(action) = hardened {
        let rule = LinuxSyscallBuilder::default()
            .names(
                HARDENED_DENIED
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>(),
            )
            .action(action);
        syscalls.push(match action {
            LinuxSeccompAction::ScmpActErrno => rule.errno_ret(EPERM).build()?,
            _ => rule.build()?,
        });
    }
    for value in PERSONALITIES {
        syscalls.push(
            LinuxSyscallBuilder::default()
                .names(vec!["personality".to_string()])
                .action(LinuxSeccompAction::ScmpActAllow)
                .args(vec![LinuxSeccompArgBuilder::default()
                    .index(0usize)
                    .value(value)
                    .op(LinuxSeccompOperator::ScmpCmpEq)
                    .build()?])
                .build()?,
        );
    }
    // clone(flags, ...) is allowed when no namespace flag is set:
    // (flags & mask) == 0. The flags are argument 0 except on s390.
    syscalls.push(
        LinuxSyscallBuilder::default()
            .names(vec!["clone".to_string()])
            .action(LinuxSeccompAction::ScmpActAllow)
            .args(vec![LinuxSeccompArgBuilder::default()
                .index(0usize)
                .value(CLONE_NAMESPACE_FLAGS)
                .value_two(0u64)
                .op(LinuxSeccompOperator::ScmpCmpMaskedEq)
                .build()?])
            .build()?,
    );
    let clone3 = LinuxSyscallBuilder::default().names(vec!["clone3".to_string()]);
    syscalls.push(if sandboxed {
        clone3.action(LinuxSeccompAction::ScmpActAllow).build()?
    } else {
        clone3
            .action(LinuxSeccompAction::ScmpActErrno)
            .errno_ret(ENOSYS)
            .build()?
    });
    LinuxSeccompBuilder::default()
        .default_action(LinuxSeccompAction::ScmpActErrno)
        .default_errno_ret(EPERM)
        .architectures(architectures())
        .syscalls(syscalls)
        .build()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_denies_by_default_and_keeps_dangerous_calls_out() {
        let profile = profile(SeccompMode::Default, false)
            .expect("profile builds")
            .expect("a profile");
        assert_eq!(profile.default_action(), LinuxSeccompAction::ScmpActErrno);
        let allowed: Vec<&String> = profile
            .syscalls()
            .iter()
            .flatten()
            .filter(|s| s.action() == LinuxSeccompAction::ScmpActAllow && s.args().is_none())
            .flat_map(|s| s.names())
            .collect();
        for name in ["read", "write", "execve", "openat", "futex"] {
            assert!(allowed.iter().any(|n| *n == name), "{name} allowed");
        }
        for name in [
            "mount",
            "unshare",
            "setns",
            "ptrace",
            "bpf",
            "reboot",
            "kexec_load",
        ] {
            assert!(!allowed.iter().any(|n| *n == name), "{name} denied");
        }
        let json = serde_json::to_value(&profile).expect("serializes");
        assert_eq!(json["defaultAction"], "SCMP_ACT_ERRNO");
    }

    fn rule_of(profile: &LinuxSeccomp, name: &str) -> Vec<LinuxSeccompAction> {
        profile
            .syscalls()
            .iter()
            .flatten()
            .filter(|s| s.names().iter().any(|n| n == name))
            .map(|s| s.action())
            .collect()
    }

    #[test]
    fn observe_logs_and_enforce_refuses_the_hardened_calls() {
        let build = |mode, sandboxed| profile(mode, sandboxed).expect("builds");
        assert!(build(SeccompMode::Off, false).is_none());
        let baseline = build(SeccompMode::Default, false).expect("a profile");
        assert_eq!(
            rule_of(&baseline, "sync"),
            [LinuxSeccompAction::ScmpActAllow]
        );
        let observe = build(SeccompMode::Observe, false).expect("a profile");
        assert_eq!(rule_of(&observe, "sync"), [LinuxSeccompAction::ScmpActLog]);
        assert_eq!(
            observe.default_action(),
            LinuxSeccompAction::ScmpActErrno,
            "the baseline still refuses what it always refused"
        );
        let enforce = build(SeccompMode::Enforce, false).expect("a profile");
        assert_eq!(
            rule_of(&enforce, "sync"),
            [LinuxSeccompAction::ScmpActErrno]
        );
        assert_eq!(
            build(SeccompMode::Observe, true),
            build(SeccompMode::Default, true),
            "gVisor cannot log to the host: observing adds no rule"
        );
        assert_eq!(
            rule_of(
                &build(SeccompMode::Enforce, true).expect("a profile"),
                "sync"
            ),
            [LinuxSeccompAction::ScmpActErrno]
        );
    }
}
