"""Celery's side of make bench-peers: a Celery worker (prefork, one process
per core) on the test Redis as broker and result backend, then its warm
task round trip and the throughput of N trivial tasks. Prints one JSON line.

Run by bench/functions/peers.py with the peers' venv (scripts/bench-peers.sh
installs a pinned Celery there); the worker is this module too
(`celery -A celery_tasks worker`), started here and stopped by its PID.
LEVERS9_BENCH_PEERS_CALLS round trips are timed after as many untimed
ones; LEVERS9_BENCH_PEERS_TASKS tasks are sent as one group and waited for.
"""

import json
import os
import signal
import subprocess
import sys
import time

from celery import Celery, group

CALLS = int(os.environ.get("LEVERS9_BENCH_PEERS_CALLS", "300"))
TASKS = int(os.environ.get("LEVERS9_BENCH_PEERS_TASKS", "10000"))
# Its own Redis database, so nothing of the levers9 stack's keys is touched.
URL = os.environ["LEVERS9_TEST_REDIS_URL"].rstrip("/") + "/11"
QUEUE = os.environ.setdefault("LEVERS9_BENCH_PEERS_QUEUE", f"l9peers-{os.getpid()}")

app = Celery("celery_tasks", broker=URL, backend=URL)
app.conf.update(
    task_default_queue=QUEUE,
    result_expires=600,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)


@app.task
def echo(x):
    return x


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "celery_tasks", "worker", "-Q", QUEUE,
         "-c", str(os.cpu_count()), "--pool", "prefork", "-l", "WARNING",
         "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=here,
        env={**os.environ, "PYTHONPATH": here},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        echo.delay(0).get(timeout=120)  # the worker is up
        for i in range(CALLS):
            echo.delay(i).get(timeout=30)
        warm = []
        for i in range(CALLS):
            start = time.perf_counter()
            echo.delay(i).get(timeout=30)
            warm.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        results = group(echo.s(i) for i in range(TASKS)).apply_async().get(timeout=600)
        elapsed = time.perf_counter() - start
        assert results == list(range(TASKS)), "Celery returned wrong results"
    finally:
        # The worker and its pool processes: its own session, by its PID.
        try:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        except ProcessLookupError:
            pass
    warm.sort()
    print(json.dumps({"warm_p50_ms": warm[len(warm) // 2], "tasks_per_s": TASKS / elapsed}))


if __name__ == "__main__":
    main()
