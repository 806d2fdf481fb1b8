"""CPU time by process over a phase of a bench: utime+stime from /proc.

Each process of the stack is given a role, found by its command line (or
by the PID it is told), and its utime+stime is read from /proc/<pid>/stat
before and after a phase:

- controlplane, worker: `levers9 controlplane` / `levers9-worker` (or
  `levers9 worker`) processes under a root PID (the bench script that
  started them), or the PIDs given;
- runners: every process in a container cgroup of that worker (the worker
  names its containers' cgroups `levers9-<FNV-1a of its --state-dir>-…`,
  see crates/levers9-worker/src/lib.rs), so the runners and what they
  start, not other stacks' containers;
- postgres: the postmaster listening on LEVERS9_TEST_DATABASE_URL's port
  (found by `-p PORT` on its command line, as scripts/test-servers.sh
  starts it) and its backends;
- redis: the `redis-server` on LEVERS9_TEST_REDIS_URL's port;
- caller: the measuring Python process itself (when used as a library) or
  the command it wraps (as a script).

A process that starts during the phase counts from zero; one that exits
during it is lost, except where its parent waits for it and "children"
are counted (the worker's runc commands, PostgreSQL's backends, the
wrapped command's children): their whole life then lands in the parent's
cutime+cstime. The containers' own processes are not children of the
worker (runc leaves them to init), so a container that starts and stops
inside a phase is not counted; one still running at its end is.

As a library (bench/functions/bench.py with LEVERS9_BENCH_CPU=1):

    meter = cpu.Meter.for_stack(root=os.getppid())
    with meter.phase("per warm call", calls):
        ...
    meter.print_table()

As a script, around a command run against a stack that is already up
(its levers9 processes found under --root, the PID of what started them,
or given with --pid; PostgreSQL and Redis by the test URLs' ports); the
command's own CPU, and that of what it waited for, is the caller's:

    python3 bench/cpu.py [--root PID] [--pid ROLE=PID]... [--per N] -- CMD...
"""

import argparse
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from urllib.parse import urlparse

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
ROLES = ("caller", "controlplane", "worker", "runners", "postgres", "redis")


def _stat(pid):
    """(start time, own ticks, waited children's ticks) of a process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces: split after it.
    fields = text[text.rindex(")") + 2 :].split()
    # Fields from 3 on: state=3, ppid=4 ... utime=14, stime=15, cutime=16,
    # cstime=17, starttime=22 (man 5 proc), here shifted by 3.
    utime, stime, cutime, cstime = (int(fields[i - 3]) for i in (14, 15, 16, 17))
    return int(fields[22 - 3]), utime + stime, cutime + cstime


def _ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
        return int(text[text.rindex(")") + 2 :].split()[1])
    except (OSError, ValueError):
        return None


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _cgroups(pid):
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            return f.read()
    except OSError:
        return ""


def _pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _descendants(root, parents):
    """Every process under root (root excluded), from a pid → ppid map."""
    children = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cgroup_prefix(state_dir):
    """The worker's container cgroup prefix for its state dir (FNV-1a 32)."""
    h = 0x811C9DC5
    for b in os.fsencode(state_dir):
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return f"levers9-{h:08x}-"


def _url_port(variable):
    url = os.environ.get(variable)
    return urlparse(url).port if url else None


def _levers9_role(args):
    """"controlplane" or "worker" for such a levers9 process, else None."""
    name = os.path.basename(args[0]) if args else ""
    if name == "levers9-worker":
        return "worker"
    if not name.startswith("levers9"):
        return None
    if len(args) >= 2 and args[1] in ("controlplane", "worker"):
        return args[1]
    return None


class Meter:
    """Finds the stack's processes by role and times phases of a bench."""

    def __init__(self, root=None, pids=None, caller=None):
        self.root = root
        self.given = dict(pids or {})
        self.caller = caller
        self.phases = []  # (label, units, {role: ms})

    @classmethod
    def for_stack(cls, root):
        """The roles of a stack started by the process `root`, measured from here."""
        return cls(root=root, caller=os.getpid())

    def pids(self, role):
        """The PIDs that have `role` as the machine stands now."""
        return [pid for pid, _ in self._find()[role]]

    def _find(self):
        """{role: [(pid, count_children)]} as the machine stands now."""
        parents = {}
        for pid in _pids():
            ppid = _ppid(pid)
            if ppid is not None:
                parents[pid] = ppid
        roles = {role: [] for role in ROLES}
        for role, pid in self.given.items():
            roles.setdefault(role, []).append((pid, True))
        under = _descendants(self.root, parents) if self.root else []
        prefixes = []
        for pid in under:
            args = _cmdline(pid)
            role = _levers9_role(args)
            if role is None:
                continue
            if role not in self.given:
                roles[role].append((pid, True))
            if role == "worker" and "--state-dir" in args:
                prefixes.append("/" + cgroup_prefix(args[args.index("--state-dir") + 1]))
        if "runners" not in self.given and prefixes:
            for pid in parents:
                groups = _cgroups(pid)
                if any(p in groups for p in prefixes):
                    roles["runners"].append((pid, False))
        pg_port = _url_port("LEVERS9_TEST_DATABASE_URL")
        redis_port = _url_port("LEVERS9_TEST_REDIS_URL")
        for pid in parents:
            args = _cmdline(pid)
            if not args:
                continue
            name = os.path.basename(args[0])
            if "postgres" not in self.given and pg_port and name == "postgres" and "-p" in args:
                if args[args.index("-p") + 1] == str(pg_port):
                    roles["postgres"].append((pid, True))
                    roles["postgres"].extend((c, False) for c in _descendants(pid, parents))
            # Redis rewrites its title: "redis-server 127.0.0.1:PORT", one argument.
            if "redis" not in self.given and redis_port and name.startswith("redis-server"):
                if " ".join(args).endswith(f":{redis_port}"):
                    roles["redis"].append((pid, True))
        if self.caller is not None:
            roles["caller"].append((self.caller, False))
        return roles

    def _snapshot(self):
        ticks = {}
        for role, found in self._find().items():
            for pid, children in found:
                s = _stat(pid)
                if s:
                    start, own, waited = s
                    ticks[(role, pid, start)] = own + (waited if children else 0)
        return ticks

    @contextmanager
    def phase(self, label, units):
        before = self._snapshot()
        yield
        after = self._snapshot()
        ms = {}
        for key, t in after.items():
            ms[key[0]] = ms.get(key[0], 0) + (t - before.get(key, 0)) * TICK_MS
        self.phases.append((label, units, ms))

    def print_table(self, out=sys.stdout):
        """One row per role, one column per phase: CPU ms per unit."""
        if not self.phases:
            return
        print(file=out)
        print("| process | " + " | ".join(f"CPU ms {label}" for label, _, _ in self.phases) + " |", file=out)
        print("|---|" + "---|" * len(self.phases), file=out)
        roles = [r for r in ROLES if any(r in ms for _, _, ms in self.phases)]
        roles += sorted({r for _, _, ms in self.phases for r in ms} - set(roles))
        for role in roles + ["total"]:
            cells = []
            for _, units, ms in self.phases:
                value = sum(ms.values()) if role == "total" else ms.get(role)
                cells.append("—" if value is None else f"{value / units:.3f}")
            print(f"| {role} | " + " | ".join(cells) + " |", file=out)
        print(f"(/proc utime+stime, {TICK_MS:.0f} ms ticks; — = no such process found)", file=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=int, help="find levers9 processes under this PID (the script that started them)")
    parser.add_argument("--pid", action="append", default=[], metavar="ROLE=PID", help="a process's role, given")
    parser.add_argument("--per", type=int, default=1, help="divide by this many units (calls, inputs)")
    parser.add_argument("--label", default="per unit")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run")
    given = {}
    for item in args.pid:
        role, _, pid = item.partition("=")
        given[role] = int(pid)
    # The stack must already run (under --root, or given): what the command
    # starts and stops itself is gone before the second reading. The
    # command's own CPU, and that of what it waited for, is the caller's.
    meter = Meter(root=args.root, pids=given)
    before = os.times()
    start = time.monotonic()
    with meter.phase(args.label, args.per):
        code = subprocess.call(command)
    after = os.times()
    elapsed = time.monotonic() - start
    meter.phases[-1][2]["caller"] = (
        after.children_user + after.children_system - before.children_user - before.children_system
    ) * 1000
    meter.print_table()
    print(f"(command ran {elapsed:.2f} s, exit {code})")
    return code


if __name__ == "__main__":
    sys.exit(main())
