//! The cgroups of our containers: where they are, their OOM counter and
//! usage, and their removal.
//!
//! Each container's cgroup is named `<prefix><id>` and given to the runtime
//! as the absolute `cgroupsPath` `/<prefix><id>`, so it is created at the top
//! of every hierarchy. Some runtimes (runc without a `cgroupsPath`, for
//! example) nest a cgroup under the caller's own cgroup instead; on the
//! machines we run on the caller's memory cgroup is not the root
//! (MACHINE-NOTES §1). So for every hierarchy we look in two places: the top
//! and under our own cgroup. Files are read by name (`memory.oom_control` on
//! v1, `memory.events` on v2, ...), so the code does not care which
//! hierarchy a directory belongs to.
//!
//! These files are virtual and answer at once, so they are read with
//! blocking calls.

use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::error::RuntimeError;
use crate::Usage;

/// How often, and how long apart, `rmdir` of a busy cgroup is retried: its
/// processes may still be exiting.
const RMDIR_TRIES: u32 = 50;
const RMDIR_PAUSE: Duration = Duration::from_millis(20);
/// After this many tries, remaining processes are killed.
const RMDIR_KILL_AFTER: u32 = 10;

/// One mounted cgroup hierarchy.
#[derive(Debug, Clone)]
struct Hierarchy {
    mount: PathBuf,
    /// Our own cgroup in it, relative to the mount.
    own: Option<PathBuf>,
    controllers: Vec<String>,
    v2: bool,
}

/// The cgroup hierarchies this process sees.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hierarchies {
    list: Vec<Hierarchy>,
}

impl Hierarchies {
    /// Reads `/proc/self/mountinfo` and `/proc/self/cgroup`. Unreadable
    /// means no cgroups: nothing to clean, no OOM detection.
    pub(crate) fn discover() -> Self {
        match (
            std::fs::read_to_string("/proc/self/mountinfo"),
            std::fs::read_to_string("/proc/self/cgroup"),
        ) {
            (Ok(mountinfo), Ok(cgroup)) => Self::parse(&mountinfo, &cgroup),
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(error = %e, "cannot read this process's cgroups");
                Self::default()
            }
        }
    }

    fn parse(mountinfo: &str, self_cgroup: &str) -> Self {
        let mut list = Vec::new();
        for line in mountinfo.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            let (Some(root), Some(mount), Some(fstype)) = (left.get(3), left.get(4), right.first())
            else {
                continue;
            };
            let v2 = *fstype == "cgroup2";
            if !v2 && *fstype != "cgroup" {
                continue;
            }
            let controllers: Vec<String> = if v2 {
                Vec::new()
            } else {
                right
                    .get(2)
                    .map(|o| o.split(',').map(str::to_string).collect())
                    .unwrap_or_default()
            };
            // Our own path: the /proc/self/cgroup line of this hierarchy
            // ("0::/x" for v2, "4:memory:/x" for v1), relative to the
            // mount's root.
            let own = self_cgroup.lines().find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
                let matches = if v2 {
                    ctrls.is_empty()
                } else {
                    !ctrls.is_empty()
                        && ctrls.split(',').all(|c| controllers.iter().any(|o| o == c))
                };
                let rel = Path::new(path).strip_prefix(root).ok()?;
                matches.then(|| rel.to_path_buf())
            });
            list.push(Hierarchy {
                mount: PathBuf::from(mount),
                own: own.filter(|p| !p.as_os_str().is_empty()),
                controllers,
                v2,
            });
        }
        Hierarchies { list }
    }

    /// Directories a container's cgroup `name` may have, existing or not.
    pub(crate) fn dirs(&self, name: &str) -> Vec<PathBuf> {
        self.parents().into_iter().map(|p| p.join(name)).collect()
    }

    /// Directories under which our cgroups are created.
    fn parents(&self) -> Vec<PathBuf> {
        let mut set = BTreeSet::new();
        for h in &self.list {
            set.insert(h.mount.clone());
            if let Some(own) = &h.own {
                set.insert(h.mount.join(own));
            }
        }
        set.into_iter().collect()
    }

    /// The v1 memory hierarchy's mount point.
    pub(crate) fn memory_v1(&self) -> Option<&Path> {
        self.list
            .iter()
            .find(|h| !h.v2 && h.controllers.iter().any(|c| c == "memory"))
            .map(|h| h.mount.as_path())
    }

    /// Whether a memory controller is mounted at all (v1, or a v2 whose
    /// `cgroup.controllers` lists it).
    pub(crate) fn has_memory(&self) -> bool {
        self.memory_v1().is_some()
            || self.list.iter().any(|h| {
                h.v2 && std::fs::read_to_string(h.mount.join("cgroup.controllers"))
                    .map(|c| c.split_whitespace().any(|c| c == "memory"))
                    .unwrap_or(false)
            })
    }

    /// Names of existing cgroups starting with `prefix`.
    pub(crate) fn names_with_prefix(&self, prefix: &str) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for parent in self.parents() {
            let Ok(entries) = std::fs::read_dir(&parent) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(prefix) && entry.path().is_dir() {
                    names.insert(name);
                }
            }
        }
        names
    }
}

/// Reads `key value` lines.
fn read_key(path: &Path, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

fn read_number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// OOM kills recorded in the container's memory cgroup (0 if unknown).
/// Must be read before the cgroup is removed.
pub(crate) fn oom_kills(dirs: &[PathBuf]) -> u64 {
    dirs.iter()
        .filter_map(|d| {
            read_key(&d.join("memory.oom_control"), "oom_kill")
                .or_else(|| read_key(&d.join("memory.events"), "oom_kill"))
        })
        .sum()
}

/// CPU time and memory of the container, if any of its cgroups exist.
pub(crate) fn usage(dirs: &[PathBuf]) -> Option<Usage> {
    let existing: Vec<&PathBuf> = dirs.iter().filter(|d| d.is_dir()).collect();
    if existing.is_empty() {
        return None;
    }
    let mut usage = Usage::default();
    for d in existing {
        if let Some(ns) = read_number(&d.join("cpuacct.usage")) {
            usage.cpu = Duration::from_nanos(ns);
        } else if let Some(us) = read_key(&d.join("cpu.stat"), "usage_usec") {
            usage.cpu = Duration::from_micros(us);
        }
        if let Some(b) = read_number(&d.join("memory.usage_in_bytes"))
            .or_else(|| read_number(&d.join("memory.current")))
        {
            usage.memory_bytes = b;
        }
    }
    Some(usage)
}

/// Creates a v1 memory cgroup with a limit and no swap. Used for runsc,
/// which leaves a cgroup it did not create in place (with its counters) when
/// the sandbox ends.
pub(crate) fn create_memory(mount: &Path, name: &str, bytes: u64) -> Result<PathBuf, RuntimeError> {
    let dir = mount.join(name);
    let write = |file: &str| {
        let path = dir.join(file);
        std::fs::write(&path, bytes.to_string())
            .map_err(|e| RuntimeError::io(format!("writing {}", path.display()), e))
    };
    std::fs::create_dir(&dir)
        .map_err(|e| RuntimeError::io(format!("creating cgroup {}", dir.display()), e))?;
    // The limit first: memsw may not be set below it.
    write("memory.limit_in_bytes")?;
    // Absent when swap accounting is off (then there is no swap to limit).
    if dir.join("memory.memsw.limit_in_bytes").exists() {
        write("memory.memsw.limit_in_bytes")?;
    }
    Ok(dir)
}

/// Kills the processes still in a cgroup (a runtime that died mid-way can
/// leave its sandbox behind).
fn kill_members(dir: &Path) {
    let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) else {
        return;
    };
    for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        tracing::warn!(pid, cgroup = %dir.display(), "killing a leftover process");
        // It may have exited meanwhile.
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Removes the given cgroup directories (absent ones are fine), waiting for
/// exiting processes and killing those that stay.
pub(crate) async fn remove(dirs: &[PathBuf]) -> Result<(), RuntimeError> {
    for dir in dirs {
        let mut tries = 0;
        loop {
            match std::fs::remove_dir(dir) {
                Ok(()) => break,
                Err(e) if e.kind() == ErrorKind::NotFound => break,
                Err(e) if tries + 1 >= RMDIR_TRIES => {
                    return Err(RuntimeError::io(
                        format!("removing cgroup {}", dir.display()),
                        e,
                    ))
                }
                Err(_) => {
                    tries += 1;
                    if tries >= RMDIR_KILL_AFTER {
                        kill_members(dir);
                    }
                    tokio::time::sleep(RMDIR_PAUSE).await;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const CGROUP: &str = "\
9:name=systemd:/
4:memory:/process_api/abc
1:cpu:/
0::/
";

    #[test]
    fn hybrid_hierarchies_and_nested_memory_are_found() {
        let h = Hierarchies::parse(MOUNTINFO, CGROUP);
        assert_eq!(h.memory_v1(), Some(Path::new("/sys/fs/cgroup/memory")));
        let dirs = h.dirs("l9-c1");
        for d in [
            "/sys/fs/cgroup/cpu/l9-c1",
            "/sys/fs/cgroup/memory/l9-c1",
            "/sys/fs/cgroup/memory/process_api/abc/l9-c1",
            "/sys/fs/cgroup/systemd/l9-c1",
            "/sys/fs/cgroup/unified/l9-c1",
        ] {
            assert!(dirs.contains(&PathBuf::from(d)), "{d} in {dirs:?}");
        }
        assert_eq!(dirs.len(), 5);
    }
}
