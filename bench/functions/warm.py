"""Warm `.remote()` round trips alone, in rounds; prints a table.

Run through scripts/bench-functions.sh, which starts the stack:

    scripts/test-servers.sh scripts/bench-functions.sh bench/functions/warm.py

After 500 untimed calls, LEVERS9_BENCH_WARM_ROUNDS (2) rounds of
LEVERS9_BENCH_WARM_CALLS (2,000) calls of bench.py's `echo`, one after
another, each round a row: p50, p90 and mean. With LEVERS9_BENCH_CPU=1,
the CPU each process spent per call in each round (bench/cpu.py). With
LEVERS9_BENCH_SYSCALLS=1 (root, strace installed), then the syscalls per
call of the controlplane and of the worker, by name: `strace -f -c` on
each in turn over LEVERS9_BENCH_SYSCALL_CALLS (1,000) more calls (strace
slows the process it follows, so no time is taken then).
"""

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import bench

WARM_UP_CALLS = 500
ROUNDS = int(os.environ.get("LEVERS9_BENCH_WARM_ROUNDS", "2"))
CALLS = int(os.environ.get("LEVERS9_BENCH_WARM_CALLS", "2000"))
SYSCALL_CALLS = int(os.environ.get("LEVERS9_BENCH_SYSCALL_CALLS", "1000"))


def syscalls(pid, calls):
    """{syscall: count per call} of process `pid` (and its threads) over `calls` warm calls."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        tracer = subprocess.Popen(["strace", "-f", "-c", "-o", out.name, "-p", str(pid)], stderr=subprocess.DEVNULL)
        time.sleep(1.5)  # strace attaches to every thread before the calls
        for i in range(calls):
            bench.echo.remote(i)
        tracer.send_signal(signal.SIGINT)
        tracer.wait()
        counts = {}
        for line in out.read().splitlines():
            fields = line.split()
            # % time, seconds, usecs/call, calls, [errors,] syscall
            if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
                counts[fields[-1]] = int(fields[3]) / calls
        return counts


def main():
    meter = bench.cpu_meter()
    bench.METER = meter
    for i in range(WARM_UP_CALLS):
        bench.echo.remote(i)
    print("| round | calls | p50 | p90 | mean |")
    print("|---|---|---|---|---|")
    for n in range(ROUNDS):
        with bench.measured(f"per call, round {n + 1}", CALLS):
            times = bench.warm_calls(CALLS)
        print(
            f"| {n + 1} | {CALLS} | {bench.pct(times, 50):.3f} ms | {bench.pct(times, 90):.3f} ms "
            f"| {statistics.mean(times):.3f} ms |",
            flush=True,
        )
    if meter:
        meter.print_table()
    if os.environ.get("LEVERS9_BENCH_SYSCALLS") == "1":
        finder = meter or bench.stack_meter()
        counts = {role: syscalls(finder.pids(role)[0], SYSCALL_CALLS) for role in ("controlplane", "worker")}
        both = lambda name: counts["controlplane"].get(name, 0) + counts["worker"].get(name, 0)
        # Those made at least once in 20 calls: the rest is the
        # processes' own upkeep (timers, allocator) in the same seconds.
        names = sorted((n for n in set(counts["controlplane"]) | set(counts["worker"]) if both(n) >= 0.05), key=both, reverse=True)
        print()
        print(f"| syscalls per warm call ({SYSCALL_CALLS} calls, strace -f -c) | controlplane | worker |")
        print("|---|---|---|")
        for name in names + ["total"]:
            cells = [sum(c.values()) if name == "total" else c.get(name, 0) for c in (counts["controlplane"], counts["worker"])]
            print(f"| {name} | {cells[0]:.1f} | {cells[1]:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
