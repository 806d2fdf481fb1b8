"""Where a cold call's time goes, step by step, beside raw runc.

    LEVERS9_LOG=info,levers9_worker=debug scripts/test-servers.sh \\
        scripts/bench-functions.sh bench/functions/cold_breakdown.py   # root

Run through scripts/bench-functions.sh (the stack of make bench-functions:
release controlplane and runc worker, test PostgreSQL and Redis, the test
Python image); the worker must log at debug (LEVERS9_LOG above), as its
"container started" and "the function runner connected" lines are read
from its log (LEVERS9_BENCH_WORKER_LOG, which the script sets).

LEVERS9_BENCH_RUNTIME=gvisor runs the worker on gVisor and the raw runs
with runsc (default runc).

LEVERS9_BENCH_SPARES=1 has the worker keep a spare container
(worker.spares), and each timed call waits first until the worker's log
says a spare is ready: the timed cold call adopts it. Its container has no
"container started" or "runner connected" line of its own, so its steps
are the caller's, the run request -> hello (the code linked into the spare,
the function loaded), and what follows. At the end it prints what the
spares waiting then hold, from their memory cgroups.

Each of LEVERS9_BENCH_COLD_CALLS (default 10) rounds makes one untimed and
one timed cold call (a new stub, so a new container; image and code
cached), then one untimed and one timed raw `runc run` of the same image
running `python3 -c pass`: each timed start follows a start of its own
kind, and the machine's drift hits both alike. A timed call's time is cut
at these points, all on the host's wall clock (the container shares it):

- caller: the stub is created (its own GetOrCreateStub call, made before
  `.remote()` so it is timed apart), then `.remote()` begins;
- worker log: the run request arrives; the image is ready, the root
  filesystem mounted, the spec built (`pulled_ms`, `rootfs_ms`,
  `spec_ms` of "container started"), the runtime's pid file is there
  (`started_ms`: runc has created the container, its process is not yet
  the user's); the runner connects to the container server (Python is up
  and the runner's modules, the SDK with them, are imported);
- in the container (this module, which is the function's code): its first
  line runs (the runner has loaded its function-loading modules and
  imports the user's module), with the CPU the process has used so far;
- worker log: the runner says hello;
- in the container: the function's body runs (its input was delivered);
- caller: `.remote()` returns.

Prints each timed call's steps, then a table of medians (and ranges),
with raw runc's median and the cold call's excess over it.
"""

import time

MODULE_STARTED = time.time()
MODULE_CPU = time.process_time()

import os  # noqa: E402 (after the timestamps, which must come first)
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from datetime import datetime  # noqa: E402

from levers9 import function  # noqa: E402

ROUNDS = int(os.environ.get("LEVERS9_BENCH_COLD_CALLS", "10"))
# The worker's runtime (scripts/bench-functions.sh passes it on), and the
# raw run it is compared with: the same runtime on the same bundle.
RUNTIME = os.environ.get("LEVERS9_BENCH_RUNTIME", "runc")
RAW_RUNTIMES = {"runc": ["runc"], "gvisor": ["runsc", "--rootless=false", "--network=none"]}
RAW = f"raw {RAW_RUNTIMES[RUNTIME][0]} run python3 -c pass"
# How long the worker has to write its lines about a container after the
# call returned (they are written before, but the file is read at once).
LOG_SETTLE_S = 0.2

LINE = re.compile(r"^(\S+)\s+\w+\s+\S+:\s+(.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")


def probe():
    """The function of every cold call: when things happened in its container."""
    return {
        "container_id": os.environ.get("LEVERS9_CONTAINER_ID", ""),
        "module_started": MODULE_STARTED,
        "module_cpu_ms": MODULE_CPU * 1000,
        "body": time.time(),
        "body_cpu_ms": time.process_time() * 1000,
    }


def cold_function(tag):
    # A distinct env makes a distinct stub: nothing is warm for it.
    return function(env={"BENCH_COLD": f"{os.getpid()}-{tag}-{time.time()}"}, keep_warm_seconds=1)(probe)


def cold_call(tag):
    f = cold_function(tag)
    began = time.time()
    f._client_and_stub()
    stub_made = time.time()
    seen = f.remote()
    seen.update(began=began, stub_made=stub_made, returned=time.time())
    return seen


def raw_run(bundle, tag):
    began = time.perf_counter()
    command = RAW_RUNTIMES[RUNTIME] + ["run", "--bundle", bundle, f"l9-cold-raw-{os.getpid()}-{tag}"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - began) * 1000


def worker_events(path, container_id):
    """The worker's log lines about one container: message -> (time, fields)."""
    events = {}
    with open(path, encoding="utf-8", errors="replace") as log:
        for line in log:
            if container_id not in line:
                continue
            m = LINE.match(line.strip())
            if not m:
                continue
            stamp, rest = m.groups()
            fields = dict(FIELD.findall(rest))
            text = FIELD.sub("", rest).strip()
            events.setdefault(text, (datetime.fromisoformat(stamp).timestamp(), fields))
    return events


SPARES = os.environ.get("LEVERS9_BENCH_SPARES", "0") != "0"
SPARE_READY = "a spare's function runner waits for its function"
ADOPTED = "a container adopted a spare"


def wait_for_a_spare(log):
    """Waits until the worker has a spare ready that no call adopted yet."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(log, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if text.count(SPARE_READY) > text.count(ADOPTED):
            return
        time.sleep(0.05)
    raise SystemExit("cold_breakdown: no spare became ready in 60 s: is LEVERS9_BENCH_SPARES set for the worker?")


def waiting_spares(log):
    """The ids of the spares the worker's log shows started and not yet
    adopted or stopped (an adopted spare's cgroup is its container's)."""
    with open(log, encoding="utf-8", errors="replace") as f:
        text = f.read()
    started = set(re.findall(r"a spare container started container_id=(spare-\w+)", text))
    gone = set(re.findall(ADOPTED + r" container_id=\S+ spare=(spare-\w+)", text))
    gone |= set(re.findall(r"a spare container was stopped container_id=(spare-\w+)", text))
    return started - gone


def spare_memory(log):
    """Rows of what each waiting spare's memory cgroup holds, in MiB: all
    it is charged (page cache included) and its anonymous memory."""
    import glob

    rows = []
    for spare in sorted(waiting_spares(log)):
        for v1 in glob.glob(f"/sys/fs/cgroup/memory/levers9-*-{spare}"):
            stat = dict(line.split() for line in open(f"{v1}/memory.stat"))
            rows.append((spare, int(open(f"{v1}/memory.usage_in_bytes").read()), int(stat["total_rss"])))
        for v2 in glob.glob(f"/sys/fs/cgroup/levers9-*-{spare}"):
            stat = dict(line.split() for line in open(f"{v2}/memory.stat"))
            rows.append((spare, int(open(f"{v2}/memory.current").read()), int(stat["anon"])))
    return [f"| {name} | {usage / 2**20:.1f} | {anon / 2**20:.1f} |" for name, usage, anon in rows]


def steps(call, events):
    """A timed call cut into named steps, in ms."""

    def at(message):
        if message not in events:
            raise SystemExit(f"cold_breakdown: no worker line {message!r} for {call['container_id']}: does the worker log at debug?")
        return events[message]

    def ms(a, b):
        return (b - a) * 1000

    requested, _ = at("run request")
    if SPARES:
        at(ADOPTED)
        hello, _ = at("the function runner is ready")
        return {
            "caller: create the stub": ms(call["began"], call["stub_made"]),
            "call -> worker's run request (controlplane, placement)": ms(call["stub_made"], requested),
            "run request -> hello (code linked into the spare, function loaded)": ms(requested, hello),
            "hello -> function body (input delivered)": ms(hello, call["body"]),
            "function body -> caller has the result": ms(call["body"], call["returned"]),
            "total: cold call to result": ms(call["began"], call["returned"]),
        }
    started_line, f = at("container started")
    connected, _ = at("the function runner connected")
    hello, _ = at("the function runner is ready")
    pulled, rootfs, spec, started = (float(f[k]) for k in ("pulled_ms", "rootfs_ms", "spec_ms", "started_ms"))
    return {
        "caller: create the stub": ms(call["began"], call["stub_made"]),
        "call -> worker's run request (controlplane, placement)": ms(call["stub_made"], requested),
        "worker: image ready (cached)": pulled,
        "worker: root filesystem": rootfs - pulled,
        "worker: spec, hardening": spec - rootfs,
        "runtime: bundle, runc until its pid file": started - spec,
        "pid file -> runner connected (runc start, Python, runner + SDK imports)": ms(started_line, connected),
        "connected -> user module's first line": ms(connected, call["module_started"]),
        "user module's first line -> hello": ms(call["module_started"], hello),
        "hello -> function body (input delivered)": ms(hello, call["body"]),
        "function body -> caller has the result": ms(call["body"], call["returned"]),
        "total: cold call to result": ms(call["began"], call["returned"]),
        "(runner's CPU until the user module)": call["module_cpu_ms"],
    }


def summary(label, values):
    values = sorted(values)
    return f"| {label} | {statistics.median(values):.1f} | {values[0]:.1f}–{values[-1]:.1f} |"


def main():
    bundle = os.environ.get("LEVERS9_BENCH_RAW_BUNDLE")
    log = os.environ.get("LEVERS9_BENCH_WORKER_LOG")
    if not bundle or not log:
        sys.exit("cold_breakdown: run me through scripts/bench-functions.sh (LEVERS9_BENCH_RAW_BUNDLE, LEVERS9_BENCH_WORKER_LOG)")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    calls, raws = [], []
    for n in range(ROUNDS):
        cold_call(f"untimed-{n}")
        if SPARES:
            wait_for_a_spare(log)
        calls.append(cold_call(f"timed-{n}"))
        raw_run(bundle, f"untimed-{n}")
        raws.append(raw_run(bundle, f"timed-{n}"))
    time.sleep(LOG_SETTLE_S)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if SPARES:
        print("\n| waiting spare's cgroup | charged MiB | anonymous MiB |\n|---|---|---|")
        print("\n".join(spare_memory(log)) or "| (none found) | | |")
    rows = [steps(call, worker_events(log, call["container_id"])) for call in calls]
    print("\n| step | " + " | ".join(str(n) for n in range(ROUNDS)) + " |")
    print("|---|" + "---|" * ROUNDS)
    for name in rows[0]:
        print(f"| {name} | " + " | ".join(f"{row[name]:.1f}" for row in rows) + " |")
    print(f"| {RAW} | " + " | ".join(f"{r:.1f}" for r in raws) + " |")
    print(f"\nmedians over {ROUNDS} rounds, ms:\n")
    print("| step | p50 | range |")
    print("|---|---|---|")
    for name in rows[0]:
        print(summary(name, [row[name] for row in rows]))
    print(summary(RAW, raws))
    excess = [row["total: cold call to result"] - raw for row, raw in zip(rows, raws)]
    print(summary(f"cold call − raw {RAW_RUNTIMES[RUNTIME][0]}, same round", excess))


if __name__ == "__main__":
    sys.exit(main())
