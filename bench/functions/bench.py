"""Function-call benchmarks against a running stack; prints a table.

Run through scripts/bench-functions.sh, which starts the stack. Measures:
- warm `.remote()` round trip (a container is already warm; timed after
  300 untimed calls);
- cold call: a new stub (so no warm container; the image is cached) to its
  first result, beside a raw `runc run … python3 -c pass` of the same image;
- `.map` throughput over N trivial inputs: a first map, which also starts
  the containers it needs, and a second on those warm containers; for a
  function with `concurrency=100` and for one with the default (1).

With LEVERS9_BENCH_CPU=1 it also prints the CPU time each process of the
stack spent per warm call and per map input (bench/cpu.py: /proc
utime+stime of the caller, controlplane, worker, runners, PostgreSQL and
Redis, before and after each phase).

Warm-ups: the warm calls are timed after 300 untimed ones; raw runc after
one untimed run; each timed cold call right after an untimed cold call of
another new stub (which also makes the process's one-time uploads), so the
machine has just started a container of the same image when it is timed.
"""

import os
import statistics
import subprocess
import sys
import time
from contextlib import nullcontext

from levers9 import function


WARM_UP_CALLS = 300
# The raw gVisor run the benches compare with (the platform is runsc's
# default: ptrace on Debian's build, the one that works on these machines).
RAW_RUNSC = ["runsc", "--rootless=false", "--network=none"]
WARM_CALLS = int(os.environ.get("LEVERS9_BENCH_WARM_CALLS", "300"))
COLD_CALLS = int(os.environ.get("LEVERS9_BENCH_COLD_CALLS", "5"))
MAP_INPUTS = int(os.environ.get("LEVERS9_BENCH_MAP_INPUTS", "10000"))
# The stack (controlplane, worker) was started by this script's parent,
# scripts/bench-functions.sh.
METER = None


def stack_meter():
    """bench/cpu.py's meter of the stack this script's parent started.
    Imported here, not at the top: this module is also the functions' code,
    loaded in containers that have only this directory."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import cpu

    return cpu.Meter.for_stack(root=os.getppid())


def cpu_meter():
    """The stack's meter when LEVERS9_BENCH_CPU=1."""
    return stack_meter() if os.environ.get("LEVERS9_BENCH_CPU") == "1" else None


def measured(label, units):
    """The phase's CPU by process, when LEVERS9_BENCH_CPU=1."""
    return METER.phase(label, units) if METER else nullcontext()


@function(keep_warm_seconds=300, concurrency=100)
def echo(x):
    return x


@function(keep_warm_seconds=300)
def echo_one_at_a_time(x):
    return x


def cold():
    return 1


def cold_function(n):
    # A distinct env per run makes a distinct stub: nothing is warm for it.
    return function(env={"BENCH_COLD": f"{os.getpid()}-{n}-{time.time()}"}, keep_warm_seconds=1)(cold)


def warm_calls(n):
    """The round trip of each of n `echo.remote()` calls, in ms."""
    times = []
    for i in range(n):
        start = time.perf_counter()
        echo.remote(i)
        times.append((time.perf_counter() - start) * 1000)
    return times


def pct(samples, p):
    samples = sorted(samples)
    return samples[min(len(samples) - 1, int(len(samples) * p / 100))]


def row(measure, samples, unit="ms"):
    print(
        f"| {measure} | {len(samples)} | {pct(samples, 50):.1f} {unit} "
        f"| {pct(samples, 99):.1f} {unit} | {statistics.mean(samples):.1f} {unit} |"
    )


def raw_runc(bundle):
    times = []
    # One untimed run first, as the cold calls have theirs.
    for i in range(-1, COLD_CALLS):
        start = time.perf_counter()
        subprocess.run(
            ["runc", "run", "-b", bundle, f"l9-bench-raw-{os.getpid()}-{i}"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        if i >= 0:
            times.append((time.perf_counter() - start) * 1000)
    return times


def main():
    global METER
    METER = cpu_meter()
    print("| measure | n | p50 | p99 | mean |")
    print("|---|---|---|---|---|")
    echo.remote(0)  # warm one container up
    # Untimed: the first few hundred calls after a start are slower (fresh
    # database connections and caches on every side), not the steady state.
    for i in range(WARM_UP_CALLS):
        echo.remote(i)
    with measured("per warm call", WARM_CALLS):
        warm = warm_calls(WARM_CALLS)
    row("warm .remote() round trip", warm)

    cold = []
    for n in range(COLD_CALLS):
        f = cold_function(n)
        # Untimed: the first one makes the process's uploads; every timed
        # cold call follows a cold start, as every timed raw run follows a
        # raw run.
        f.remote()
        g = cold_function(n + 1000)
        start = time.perf_counter()
        g.remote()
        cold.append((time.perf_counter() - start) * 1000)
    bundle = os.environ.get("LEVERS9_BENCH_RAW_BUNDLE")
    if bundle:
        row("raw runc run python3 -c pass", raw_runc(bundle))
    row("cold call (new container, image cached) to result", cold)

    # The cold calls' containers stop a second after their call: let them
    # go first, or their teardown shares the cores with the first map.
    time.sleep(2)
    # The first map starts the containers its 1,000 inputs in flight ask
    # for (one is warm), on the same cores; the second finds them warm.
    maps(echo, "")
    echo_one_at_a_time.remote(0)
    maps(echo_one_at_a_time, " (concurrency 1)")
    if METER:
        METER.print_table()


def maps(f, label):
    for n, which in enumerate((".map, scaling up from one warm container,", ".map on the containers the first one started")):
        with measured(f"per input, {('first', 'second')[n]} map{label}", MAP_INPUTS):
            start = time.perf_counter()
            results = list(f.map(range(MAP_INPUTS)))
            elapsed = time.perf_counter() - start
        assert results == list(range(MAP_INPUTS)), "map returned wrong results"
        print(f"| {which}{label} over {MAP_INPUTS} inputs | {MAP_INPUTS} | {MAP_INPUTS / elapsed:.0f} inputs/s | | {elapsed:.2f} s total |")


if __name__ == "__main__":
    sys.exit(main())
