"""One cold and one warm call, then wait out the container's keep-warm.

Run by scripts/bench-memory.sh (make bench-memory) between its two
readings of the controlplane's and the worker's memory: the second reading
is of a stack that has served calls and is idle again, its container
stopped. Prints how long the calls and the wait took.
"""

import os
import sys
import time

from levers9 import function

KEEP_WARM_SECONDS = 2
STOP_DEADLINE_SECONDS = 60


@function(keep_warm_seconds=KEEP_WARM_SECONDS)
def echo(x):
    return x


def containers_running(prefix):
    """Whether any process sits in one of the worker's container cgroups."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cgroup") as f:
                if prefix in f.read():
                    return True
        except OSError:
            pass
    return False


def main():
    # Imported here, not at the top: this module is also the function's
    # code, loaded in a container that has only this directory.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import cpu

    prefix = "/" + cpu.cgroup_prefix(os.environ["LEVERS9_BENCH_WORKER_STATE_DIR"])
    start = time.perf_counter()
    assert echo.remote(1) == 1
    cold = time.perf_counter()
    assert echo.remote(2) == 2
    warm = time.perf_counter()
    deadline = warm + KEEP_WARM_SECONDS + STOP_DEADLINE_SECONDS
    while containers_running(prefix):
        if time.perf_counter() > deadline:
            sys.exit(f"memory_call: the container still runs {STOP_DEADLINE_SECONDS} s after its keep-warm")
        time.sleep(0.2)
    print(
        f"memory_call: cold call {(cold - start) * 1000:.0f} ms, warm call {(warm - cold) * 1000:.0f} ms, "
        f"container gone {time.perf_counter() - warm:.1f} s after the warm call",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
