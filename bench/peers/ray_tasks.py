"""Ray's side of make bench-peers: a local Ray on loopback, then its warm
task round trip and the throughput of N trivial tasks. Prints one JSON line.

Run by bench/functions/peers.py with the peers' venv (scripts/bench-peers.sh
installs a pinned Ray there). LEVERS9_BENCH_PEERS_CALLS round trips are
timed after as many untimed ones; LEVERS9_BENCH_PEERS_TASKS tasks are
submitted at once and waited for, after the round trips (so Ray's worker
processes are started and warm).
"""

import json
import os
import time

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
import ray  # noqa: E402

CALLS = int(os.environ.get("LEVERS9_BENCH_PEERS_CALLS", "300"))
TASKS = int(os.environ.get("LEVERS9_BENCH_PEERS_TASKS", "10000"))


@ray.remote
def echo(x):
    return x


def main():
    ray.init(
        num_cpus=os.cpu_count(),
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        logging_level="ERROR",
        log_to_driver=False,
    )
    try:
        for i in range(CALLS):
            ray.get(echo.remote(i))
        warm = []
        for i in range(CALLS):
            start = time.perf_counter()
            ray.get(echo.remote(i))
            warm.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        results = ray.get([echo.remote(i) for i in range(TASKS)])
        elapsed = time.perf_counter() - start
        assert results == list(range(TASKS)), "Ray returned wrong results"
    finally:
        ray.shutdown()
    warm.sort()
    print(json.dumps({"warm_p50_ms": warm[len(warm) // 2], "tasks_per_s": TASKS / elapsed}))


if __name__ == "__main__":
    main()
