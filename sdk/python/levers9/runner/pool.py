"""The threads that run a container's inputs.

What the runner needs of `concurrent.futures.ThreadPoolExecutor`, and no
more: importing that package (and `logging`, which it imports) costs every
cold start ~7 ms of CPU. Inputs start in the order they were submitted, on
at most `threads` threads, each started when no started thread is idle.
"""

from __future__ import annotations

import sys
import threading
from queue import SimpleQueue

_WAITING, _RUNNING, _ENDED = "waiting", "running", "ended"


class Job:
    """An input submitted to the pool: waiting, running, or ended (run or
    cancelled)."""

    def __init__(self, fn, args: tuple):
        self._fn = fn
        self._args = args
        self._lock = threading.Lock()
        self._state = _WAITING
        self._cancelled = False
        self._callbacks: list = []

    def cancel(self) -> bool:
        """Drops the job if it has not started; whether it is cancelled."""
        with self._lock:
            if self._state != _WAITING:
                return self._cancelled
            self._state, self._cancelled = _ENDED, True
        self._ended()
        return True

    def done(self) -> bool:
        return self._state == _ENDED

    def add_done_callback(self, callback) -> None:
        """Calls `callback(job)` once the job has ended (now, if it has)."""
        with self._lock:
            if self._state != _ENDED:
                self._callbacks.append(callback)
                return
        _call(callback, self)

    def run(self) -> None:
        with self._lock:
            if self._state != _WAITING:
                return
            self._state = _RUNNING
        try:
            self._fn(*self._args)
        except BaseException as e:  # the pool's thread goes on with the next input
            _log(f"an input's thread failed: {type(e).__name__}: {e}")
        finally:
            with self._lock:
                self._state = _ENDED
            self._ended()

    def _ended(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            _call(callback, self)


class Pool:
    """Runs submitted calls on up to `threads` threads, in order."""

    def __init__(self, threads: int, name: str):
        self._threads = threads
        self._name = name
        self._started = 0
        self._jobs: SimpleQueue = SimpleQueue()
        # One permit per finished job: a thread that will take the next
        # job without a new thread being started.
        self._idle = threading.Semaphore(0)

    def submit(self, fn, *args) -> Job:
        job = Job(fn, args)
        self._jobs.put(job)
        if not self._idle.acquire(blocking=False) and self._started < self._threads:
            self._started += 1
            threading.Thread(target=self._work, name=f"{self._name}_{self._started}", daemon=True).start()
        return job

    def _work(self) -> None:
        while True:
            self._jobs.get().run()
            self._idle.release()


def _call(callback, job: Job) -> None:
    try:
        callback(job)
    except Exception as e:
        _log(f"a callback of an input failed: {type(e).__name__}: {e}")


def _log(message: str) -> None:
    sys.__stderr__.write(f"levers9 runner: {message}\n")
    sys.__stderr__.flush()
