"""levers9 beside Ray, Celery+Redis and raw OCI runtimes, in one run.

Run by scripts/bench-peers.sh (make bench-peers) through
scripts/bench-functions.sh, which starts the levers9 stack (controlplane,
runc worker) and unpacks the raw bundle of the test Python image. Rounds
(LEVERS9_BENCH_PEERS_ROUNDS, default 2) run every system one after the
other, A B C … A B C …, so the machine's drift hits all alike:

- levers9 (bench.py's functions): warm `.remote()` p50 (after untimed
  calls), cold call p50 (each timed one after an untimed one, as in
  bench.py) and a `.map` of N trivial inputs (round 1's also starts the
  containers it asks for; later rounds' find them warm);
- Ray and Celery (bench/peers/*.py, in the peers' venv,
  LEVERS9_BENCH_PEERS_PYTHON): warm task round trip p50 and N trivial
  tasks submitted at once;
- raw `runc`, `crun`, `runsc` `run` of the bundle running `python3 -c
  pass` (one untimed run, then timed ones); a runtime not installed is
  skipped with a note.

LEVERS9_BENCH_PEERS_CALLS (300) round trips, LEVERS9_BENCH_PEERS_TASKS
(10,000) tasks or inputs, LEVERS9_BENCH_PEERS_STARTS (5) container starts.
Prints each round's figures, then one table of medians over the rounds
with the ratio levers9 ÷ peer (for times, above 1 means levers9 is slower;
for throughput, above 1 means levers9 is faster).
"""

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

import bench

ROUNDS = int(os.environ.get("LEVERS9_BENCH_PEERS_ROUNDS", "2"))
CALLS = int(os.environ.get("LEVERS9_BENCH_PEERS_CALLS", "300"))
TASKS = int(os.environ.get("LEVERS9_BENCH_PEERS_TASKS", "10000"))
STARTS = int(os.environ.get("LEVERS9_BENCH_PEERS_STARTS", "5"))
PEERS_PYTHON = os.environ.get("LEVERS9_BENCH_PEERS_PYTHON")
PEERS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers")
# A peer that has not answered by then is stopped and left out of the round.
PEER_TIMEOUT = int(os.environ.get("LEVERS9_BENCH_PEERS_TIMEOUT", "600"))
RUNTIMES = {
    "runc": ["runc"],
    "crun": ["crun"],
    "runsc": bench.RAW_RUNSC,
}
# crun refuses a hybrid cgroup layout (v1 controllers with a v2 hierarchy at
# /sys/fs/cgroup/unified, as on this project's machines): it runs in a
# mount namespace of its own with that mount taken away, which adds an
# unshare and a shell (≈2 ms) to its time.
HYBRID = os.path.ismount("/sys/fs/cgroup/unified")
if HYBRID:
    RUNTIMES["crun"] = ["unshare", "-m", "sh", "-c", 'umount -l /sys/fs/cgroup/unified && exec crun "$@"', "crun"]

figures = {}  # (system, measure) -> [one value per round]


def record(system, measure, value):
    figures.setdefault((system, measure), []).append(value)
    print(f"  {system}: {measure} {value:,.1f}", flush=True)


def levers9_round(first):
    if first:
        bench.echo.remote(0)
        for i in range(bench.WARM_UP_CALLS):
            bench.echo.remote(i)
    record("levers9", "warm p50 ms", bench.pct(bench.warm_calls(CALLS), 50))
    cold = []
    for n in range(STARTS):
        bench.cold_function(n).remote()
        g = bench.cold_function(n + 1000)
        start = time.perf_counter()
        g.remote()
        cold.append((time.perf_counter() - start) * 1000)
    record("levers9", "start p50 ms", bench.pct(cold, 50))
    time.sleep(2)  # the cold calls' containers stop, as in bench.py
    start = time.perf_counter()
    results = list(bench.echo.map(range(TASKS)))
    elapsed = time.perf_counter() - start
    assert results == list(range(TASKS)), "map returned wrong results"
    record("levers9", "tasks/s", TASKS / elapsed)


def peer_round(system, script):
    """A peer's script in its own session, killed by its PID past the timeout."""
    child = subprocess.Popen(
        [PEERS_PYTHON, os.path.join(PEERS_DIR, script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = child.communicate(timeout=PEER_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        print(f"  {system}: no answer in {PEER_TIMEOUT} s, left out of this round", flush=True)
        return
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if child.returncode != 0 or not lines:
        print(f"  {system}: failed ({child.returncode}): {err.strip()[-500:]}", flush=True)
        return
    result = json.loads(lines[-1])
    record(system, "warm p50 ms", result["warm_p50_ms"])
    record(system, "tasks/s", result["tasks_per_s"])


def raw_round(name, command, bundle, round_no):
    """True if the runtime ran; a failing one is left out from then on."""
    times = []
    for i in range(-1, STARTS):  # one untimed run first
        start = time.perf_counter()
        done = subprocess.run(
            command + ["run", "--bundle", bundle, f"l9-peers-{name}-{os.getpid()}-{round_no}-{i + 1}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            print(f"  raw {name}: failed ({done.returncode}): {done.stderr.strip()[-300:]}; left out", flush=True)
            return False
        if i >= 0:
            times.append((time.perf_counter() - start) * 1000)
    record(f"raw {name}", "start p50 ms", bench.pct(times, 50))
    return True


def main():
    bundle = os.environ["LEVERS9_BENCH_RAW_BUNDLE"]
    runtimes = {}
    for name, command in RUNTIMES.items():
        if shutil.which(name):
            runtimes[name] = command
        else:
            print(f"peers: {name} is not installed: raw {name} is skipped")
    if HYBRID and "crun" in runtimes:
        print("peers: hybrid cgroups: crun runs in a mount namespace without /sys/fs/cgroup/unified (+≈2 ms)")
    if not PEERS_PYTHON:
        print("peers: LEVERS9_BENCH_PEERS_PYTHON is not set: Ray and Celery are skipped")
    for r in range(ROUNDS):
        print(f"round {r + 1} of {ROUNDS}", flush=True)
        levers9_round(first=r == 0)
        if PEERS_PYTHON:
            peer_round("Ray", "ray_tasks.py")
            peer_round("Celery", "celery_tasks.py")
        for name, command in list(runtimes.items()):
            if not raw_round(name, command, bundle, r):
                del runtimes[name]
    table()


def median(system, measure):
    values = figures.get((system, measure))
    return (statistics.median(values), values) if values else (None, None)


def table():
    rows = [("warm round trip p50", "warm p50 ms", "ms", p) for p in ("Ray", "Celery")]
    rows += [(f"{TASKS:,} trivial tasks", "tasks/s", "/s", p) for p in ("Ray", "Celery")]
    rows += [("start (levers9: cold call to result; raw: `run` of python3 -c pass)", "start p50 ms", "ms", f"raw {n}")
             for n in RUNTIMES]
    print()
    print(f"Medians over {ROUNDS} rounds (range in brackets); levers9 ÷ peer: for times above 1 is slower, "
          "for tasks/s above 1 is faster.")
    print()
    print("| measure | levers9 | peer | peer's figure | levers9 ÷ peer |")
    print("|---|---|---|---|---|")

    def cell(value, values, unit):
        spread = f" [{min(values):,.1f}–{max(values):,.1f}]" if len(values) > 1 else ""
        return f"{value:,.1f} {unit}{spread}"

    for label, measure, unit, peer in rows:
        ours, our_values = median("levers9", measure)
        theirs, their_values = median(peer, measure)
        if ours is None or theirs is None:
            print(f"| {label} | {cell(ours, our_values, unit) if ours else '—'} | {peer} | not measured | |")
            continue
        print(f"| {label} | {cell(ours, our_values, unit)} | {peer} | {cell(theirs, their_values, unit)} "
              f"| {ours / theirs:.2f} |")
    print(f"({CALLS} round trips, {TASKS} tasks, {STARTS} starts a round; levers9's worker runs runc)")


if __name__ == "__main__":
    sys.exit(main())
