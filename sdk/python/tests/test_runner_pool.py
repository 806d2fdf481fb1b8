"""The runner's pool of input threads: order, bound, cancel, callbacks."""

import threading
import time

from levers9.runner.pool import Pool

WAIT = 5.0


def test_inputs_start_in_order_on_at_most_the_pools_threads():
    pool = Pool(2, "t")
    release = threading.Event()
    started, lock, running, most = [], threading.Lock(), [0], [0]

    def run(n):
        with lock:
            started.append(n)
            running[0] += 1
            most[0] = max(most[0], running[0])
        release.wait(WAIT)
        with lock:
            running[0] -= 1

    jobs = [pool.submit(run, n) for n in range(6)]
    deadline = time.monotonic() + WAIT
    while len(started) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started == [0, 1], "two threads, the first two inputs"
    assert not jobs[2].done()
    release.set()
    for job in jobs:
        ended = threading.Event()
        job.add_done_callback(lambda _: ended.set())
        assert ended.wait(WAIT)
    assert started == list(range(6)) and most[0] == 2
    assert {t.name for t in threading.enumerate() if t.name.startswith("t_")} <= {"t_1", "t_2"}


def test_a_waiting_input_cancels_and_a_running_one_does_not():
    pool = Pool(1, "c")
    running, release = threading.Event(), threading.Event()
    first = pool.submit(lambda: (running.set(), release.wait(WAIT)))
    second = pool.submit(lambda: None)
    assert running.wait(WAIT)
    heard = []
    second.add_done_callback(heard.append)
    assert second.cancel() and second.done() and heard == [second]
    assert second.cancel(), "cancelling twice still says cancelled"
    assert not first.cancel() and not first.done()
    release.set()
    ended = threading.Event()
    first.add_done_callback(lambda _: ended.set())
    assert ended.wait(WAIT) and not first.cancel()
    late = []
    first.add_done_callback(late.append)
    assert late == [first], "a callback added after the end runs at once"


def test_a_failing_call_or_callback_leaves_the_thread_serving(capfd):
    pool = Pool(1, "f")
    failing = pool.submit(lambda: 1 / 0)
    failing.add_done_callback(lambda _: [][1])
    done = threading.Event()
    pool.submit(done.set)
    assert done.wait(WAIT)
    err = capfd.readouterr().err
    assert "an input's thread failed: ZeroDivisionError" in err
    assert "a callback of an input failed: IndexError" in err
