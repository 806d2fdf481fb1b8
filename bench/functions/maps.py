"""Map throughput by max_containers and concurrency; prints a table.

Run through scripts/bench-functions.sh (make bench-maps), which starts the
stack. For each "max_containers,concurrency" pair of LEVERS9_BENCH_MAPS
(default "16,1 1,1 10,100"): a stub with those settings, one warm call
(so one container is warm), then LEVERS9_BENCH_MAP_RUNS maps (default 3)
of LEVERS9_BENCH_MAP_INPUTS trivial inputs (default 10,000) back to back:
the first also starts the containers it asks for, the next find them warm.
With LEVERS9_BENCH_CPU=1, the CPU per input by process of every map
(bench/cpu.py).

A pair's containers stay warm LEVERS9_BENCH_MAPS_KEEP_WARM seconds
(default 10) and the next pair starts after they are gone, so one pair's
containers do not hold the worker's room when the next starts its own.
"""

import os
import sys
import time
from contextlib import nullcontext

from levers9 import function


PAIRS = [tuple(int(v) for v in p.split(",")) for p in os.environ.get("LEVERS9_BENCH_MAPS", "16,1 1,1 10,100").split()]
RUNS = int(os.environ.get("LEVERS9_BENCH_MAP_RUNS", "3"))
MAP_INPUTS = int(os.environ.get("LEVERS9_BENCH_MAP_INPUTS", "10000"))
KEEP_WARM = int(os.environ.get("LEVERS9_BENCH_MAPS_KEEP_WARM", "10"))
METER = None


def cpu_meter():
    """bench/cpu.py's meter when LEVERS9_BENCH_CPU=1. Imported here, not at
    the top: this module is also the functions' code, loaded in containers
    that have only this directory."""
    if os.environ.get("LEVERS9_BENCH_CPU") != "1":
        return None
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import cpu

    return cpu.Meter.for_stack(root=os.getppid())


def echo(x):
    return x


def main():
    global METER
    METER = cpu_meter()
    print("| max_containers, concurrency | " + " | ".join(f"map {n + 1}" for n in range(RUNS)) + " |")
    print("|---|" + "---|" * RUNS)
    for i, (max_containers, concurrency) in enumerate(PAIRS):
        if i:
            time.sleep(KEEP_WARM + 3)  # the last pair's containers stop
        f = function(
            max_containers=max_containers,
            concurrency=concurrency,
            keep_warm_seconds=KEEP_WARM,
            # A stub of its own per run of the script: nothing warm for it.
            env={"BENCH_MAPS": f"{os.getpid()}-{time.time()}"},
        )(echo)
        f.remote(0)
        rates = []
        for n in range(RUNS):
            label = f"per input, {max_containers},{concurrency} map {n + 1}"
            with METER.phase(label, MAP_INPUTS) if METER else nullcontext():
                start = time.perf_counter()
                results = list(f.map(range(MAP_INPUTS)))
                elapsed = time.perf_counter() - start
            assert results == list(range(MAP_INPUTS)), "map returned wrong results"
            rates.append(f"{MAP_INPUTS / elapsed:,.0f}/s")
        print(f"| {max_containers}, {concurrency} | " + " | ".join(rates) + " |")
    print(f"({MAP_INPUTS} inputs a map)")
    if METER:
        METER.print_table()


if __name__ == "__main__":
    sys.exit(main())
