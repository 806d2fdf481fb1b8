//! Seccomp observe mode, seen from the worker: the kernel writes an audit
//! record (type 1326, action `SCMP_ACT_LOG`) for each call the hardened
//! rules would refuse. The worker follows the kernel log, finds the
//! container of the calling process through its cgroup, and records one
//! violation per record.
//!
//! A process that exits before the worker reads its record cannot be
//! placed in a container; it is recorded without one. The log needs root
//! (`/dev/kmsg`), as the worker has; without it, observe mode still logs to
//! the kernel, and the worker says once that it cannot follow.

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::sync::Arc;

use levers9_ids::ContainerId;
use tokio::sync::oneshot;

use super::violations::{Check, SecurityMetrics, Subject};

/// `code=` of a record made by `SCMP_ACT_LOG` (`SECCOMP_RET_LOG`).
const RET_LOG: &str = "0x7ffc0000";

/// What the kernel said about one logged call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// Host pid of the caller.
    pub pid: u32,
    /// The caller's command name as the record gives it (`comm=`, quotes
    /// removed); empty if it has none.
    pub comm: String,
    /// The syscall's number on the caller's architecture (`syscall=`), not its
    /// name.
    pub syscall: u32,
}

/// Reads a `SCMP_ACT_LOG` record out of a kernel log line; `None` for any
/// other line.
pub fn parse(line: &str) -> Option<AuditRecord> {
    if !line.contains("type=1326") {
        return None;
    }
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|word| word.strip_prefix(name)?.strip_prefix('='))
    };
    if field("code")? != RET_LOG {
        return None;
    }
    Some(AuditRecord {
        pid: field("pid")?.parse().ok()?,
        comm: field("comm").unwrap_or("").trim_matches('"').to_owned(),
        syscall: field("syscall")?.parse().ok()?,
    })
}

/// The container id in a `/proc/<pid>/cgroup` text, for cgroups named
/// `<prefix><id>`; a name whose rest is no valid id is not a container's.
pub fn container_in_cgroups(cgroups: &str, prefix: &str) -> Option<ContainerId> {
    cgroups.lines().find_map(|line| {
        let path = line.splitn(3, ':').nth(2)?;
        path.split('/')
            .find_map(|part| part.strip_prefix(prefix))
            .and_then(|id| ContainerId::parse(id).ok())
    })
}

/// The name of a syscall of the hardened rules, the only ones logged.
fn syscall_name(nr: u32) -> Option<&'static str> {
    #[cfg(target_arch = "x86_64")]
    const NAMES: &[(u32, &str)] = &[
        (162, "sync"),
        (306, "syncfs"),
        (27, "mincore"),
        (216, "remap_file_pages"),
        (278, "vmsplice"),
        (301, "fanotify_mark"),
        (214, "epoll_ctl_old"),
        (215, "epoll_wait_old"),
    ];
    #[cfg(target_arch = "aarch64")]
    const NAMES: &[(u32, &str)] = &[
        (81, "sync"),
        (267, "syncfs"),
        (232, "mincore"),
        (234, "remap_file_pages"),
        (75, "vmsplice"),
        (263, "fanotify_mark"),
    ];
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    const NAMES: &[(u32, &str)] = &[];
    NAMES.iter().find(|(n, _)| *n == nr).map(|(_, name)| *name)
}

/// Finds the container this worker holds whose processes run under a
/// runtime id (a container's own, or the spare's it adopted), and its stub.
pub type StubOf = Arc<dyn Fn(&ContainerId) -> Option<(ContainerId, String)> + Send + Sync>;

/// Says when a follower started by [`follow`] reads the kernel log from
/// its end, so that a record written after that is seen. The worker does
/// not wait for it; a test does, before it makes a container log a call.
#[derive(Debug)]
pub struct Following(oneshot::Receiver<()>);

impl Following {
    /// Waits until the follower reads from the end of the log: true then,
    /// false when it cannot follow the log at all (no `/dev/kmsg`, not
    /// root, no thread).
    pub async fn at_end(self) -> bool {
        self.0.await.is_ok()
    }
}

/// Follows the kernel log on a thread of its own for the life of the
/// process, recording each logged call of a container whose cgroup starts
/// with `cgroup_prefix`.
pub fn follow(
    cgroup_prefix: String,
    pool: String,
    stub_of: StubOf,
    metrics: SecurityMetrics,
) -> Following {
    let (at_end, following) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("levers9-seccomp-log".into())
        .spawn(move || {
            let mut kmsg = match std::fs::File::open("/dev/kmsg") {
                Ok(file) => file,
                Err(error) => {
                    tracing::info!(%error, "cannot follow the kernel log: seccomp observe mode logs to the kernel only");
                    return;
                }
            };
            // Only what happens from now on: older records were counted by
            // an earlier life of the worker, or belong to nobody here.
            if let Err(error) = kmsg.seek(SeekFrom::End(0)) {
                tracing::info!(%error, "cannot skip the old kernel log; reading it all");
            }
            // Nobody may be waiting (the worker does not): not an error.
            let _ = at_end.send(());
            // Each read of /dev/kmsg returns one record; a record overwritten
            // before it was read returns EPIPE, and reading goes on.
            let mut lines = BufReader::new(kmsg);
            let mut line = String::new();
            loop {
                line.clear();
                match lines.read_line(&mut line) {
                    Ok(0) => return,
                    Ok(_) => {}
                    Err(error) if error.raw_os_error() == Some(32) => continue,
                    Err(error) => {
                        tracing::warn!(%error, "stopped following the kernel log");
                        return;
                    }
                }
                let Some(record) = parse(&line) else { continue };
                let cgroups =
                    std::fs::read_to_string(format!("/proc/{}/cgroup", record.pid)).ok();
                let container = cgroups
                    .as_deref()
                    .and_then(|c| container_in_cgroups(c, &cgroup_prefix));
                if cgroups.is_some() && container.is_none() {
                    continue; // a process of the host or of another worker
                }
                let (container_id, stub_id) = match container.as_ref().and_then(|id| stub_of(id)) {
                    Some((held, stub_id)) => (Some(held), stub_id),
                    None => (container, String::new()),
                };
                let subject = Subject {
                    stub_id,
                    container_id,
                    pool: pool.clone(),
                };
                let syscall = syscall_name(record.syscall).unwrap_or("unknown");
                let exited = if subject.container_id.is_none() {
                    " (it exited before it could be placed in a container)"
                } else {
                    ""
                };
                metrics.record(
                    Check::Seccomp,
                    "observe",
                    &subject,
                    &format!(
                        "syscall {syscall} ({}) by pid {} {:?}{exited}",
                        record.syscall, record.pid, record.comm
                    ),
                );
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start following the kernel log");
    }
    Following(following)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOGGED: &str =
        "5,1234,5678,-;audit: type=1326 audit(1764712345.123:42): auid=4294967295 \
        uid=0 gid=0 ses=4294967295 pid=4242 comm=\"probe\" exe=\"/bin/probe\" sig=0 \
        arch=c000003e syscall=162 compat=0 ip=0x4a1b2c code=0x7ffc0000";

    #[test]
    fn logged_calls_are_read_and_others_are_not() {
        assert_eq!(
            parse(LOGGED),
            Some(AuditRecord {
                pid: 4242,
                comm: "probe".into(),
                syscall: 162
            })
        );
        let killed = LOGGED.replace("code=0x7ffc0000", "code=0x80000000");
        assert_eq!(parse(&killed), None, "not an observe record");
        assert_eq!(parse("6,1,2,-;eth0: link up"), None);
    }

    #[test]
    fn the_container_is_found_in_the_cgroup_path() {
        let v1 = "12:pids:/levers9-ab12cd34-c-7\n11:memory:/levers9-ab12cd34-c-7\n0::/";
        assert_eq!(
            container_in_cgroups(v1, "levers9-ab12cd34-")
                .as_ref()
                .map(ContainerId::as_str),
            Some("c-7")
        );
        let v2 = "0::/system.slice/levers9-ab12cd34-c-8";
        assert_eq!(
            container_in_cgroups(v2, "levers9-ab12cd34-")
                .as_ref()
                .map(ContainerId::as_str),
            Some("c-8")
        );
        assert_eq!(container_in_cgroups(v1, "levers9-ffffffff-"), None);
        assert_eq!(container_in_cgroups("0::/user.slice", "levers9-"), None);
    }
}
