"""A generator function in the runner: items within a window, then the result.

Against the same fake worker as test_runner.py (the runner as a container
runs it), plus the window's logic on its own.
"""

import threading
import time

import cloudpickle
import pytest

from levers9.runner.stream import WINDOW_BYTES, WINDOW_ITEMS, Credit
from levers9.wire import write_frame
from test_runner import FakeWorker, make_worker  # noqa: F401 (the fixture)

APP = '''
import asyncio, sys
from levers9 import function

@function
def count(n):
    for i in range(n):
        yield i

@function
async def acount(n):
    for i in range(n):
        await asyncio.sleep(0)
        print(f"before {i}")
        yield i * 10

@function
def fails_after(n):
    for i in range(n):
        yield i
    raise KeyError("no more")

@function
def big(n, size):
    for i in range(n):
        yield bytes(size)

@function
def endless():
    try:
        i = 0
        while True:
            yield i
            i += 1
    finally:
        print("closed", file=sys.stderr)
'''


def items_then_result(worker, limit=None, start=0):
    """Item values in order from item `start` until the result (or `limit`
    items): (items, result header, result body)."""
    items = []
    while limit is None or len(items) < limit:
        header, body = worker.read()
        if header["type"] == "item":
            assert header["index"] == start + len(items)
            items.append(cloudpickle.loads(body))
        elif header["type"] == "result":
            return items, header, body
    return items, None, None


def ack(worker, task_id, received):
    write_frame(worker.conn, {"type": "ack", "task_id": task_id, "received": received}, b"")


def nothing_more_within(worker, seconds):
    """Whether no frame came within `seconds`, whether read into the buffer or not."""
    time.sleep(seconds)
    worker.conn.setblocking(False)
    try:
        return worker.reader.peek(1) == b""
    except BlockingIOError:
        return True
    finally:
        worker.conn.settimeout(20)


def test_a_generator_sends_a_window_of_items_and_more_as_they_are_acknowledged(make_worker):
    worker = make_worker("count", app=APP)
    worker.read()
    worker.send_input("t1", 40)
    items, _, _ = items_then_result(worker, limit=WINDOW_ITEMS)
    assert items == list(range(WINDOW_ITEMS))
    assert nothing_more_within(worker, 0.3), "the runner ran past its window"
    ack(worker, "t1", 8)
    more, _, _ = items_then_result(worker, limit=8, start=16)
    assert more == list(range(16, 24))
    ack(worker, "t1", 40)
    rest, header, body = items_then_result(worker, start=24)
    assert rest == list(range(24, 40))
    assert (header["task_id"], header["state"], cloudpickle.loads(body)) == ("t1", "complete", 40)


def test_an_async_generator_streams_and_its_output_comes_before_each_item(make_worker):
    worker = make_worker("acount", app=APP)
    worker.read()
    worker.send_input("t1", 3)
    frames = []
    while True:
        header, body = worker.read()
        frames.append((header["type"], body))
        if header["type"] == "result":
            break
    kinds = [kind for kind, _ in frames]
    assert kinds == ["output", "item", "output", "item", "output", "item", "result"]
    assert [cloudpickle.loads(body) for kind, body in frames if kind == "item"] == [0, 10, 20]
    assert frames[0][1] == b"before 0\n"
    assert cloudpickle.loads(frames[-1][1]) == 3


def test_an_exception_comes_after_the_items_before_it(make_worker):
    worker = make_worker("fails_after", app=APP)
    worker.read()
    worker.send_input("t1", 3)
    items, header, body = items_then_result(worker)
    assert items == [0, 1, 2]
    assert header["state"] == "error"
    assert header["message"] == "KeyError: 'no more'"
    assert 'raise KeyError("no more")' in header["traceback"]
    assert "levers9/runner" not in header["traceback"]
    assert isinstance(cloudpickle.loads(body), KeyError)


def test_large_items_count_against_the_byte_window(make_worker):
    size = WINDOW_BYTES // 3 + 1
    worker = make_worker("big", app=APP)
    worker.read()
    worker.send_input("t1", 5, size)
    # Three of them pass the byte window: the fourth waits.
    items, _, _ = items_then_result(worker, limit=3)
    assert [len(i) for i in items] == [size] * 3
    assert nothing_more_within(worker, 0.3)
    ack(worker, "t1", 5)
    rest, header, body = items_then_result(worker, start=3)
    assert len(rest) == 2 and cloudpickle.loads(body) == 5


def test_a_cancel_stops_a_running_generator_at_its_next_item_and_the_container_stays(make_worker):
    worker = make_worker("endless", app=APP)
    worker.read()
    worker.send_input("t1")
    items_then_result(worker, limit=WINDOW_ITEMS)
    write_frame(worker.conn, {"type": "cancel", "task_id": "t1"}, b"")
    frames = []
    while True:
        header, body = worker.read()
        frames.append((header, body))
        if header["type"] == "result":
            break
    result = frames[-1][0]
    assert (result["task_id"], result["state"]) == ("t1", "cancelled")
    assert result["message"] == f"cancelled by the caller after {WINDOW_ITEMS} items"
    assert ("output", b"closed\n") in [(h["type"], b) for h, b in frames], "its finally block ran"
    assert "cancel_refused" not in [h["type"] for h, _ in frames]
    # The runner goes on with the next input.
    worker.send_input("t2")
    items, _, _ = items_then_result(worker, limit=2)
    assert items == [0, 1]


def test_the_window_lets_one_item_through_whatever_its_size():
    credit = Credit(items=2, size=10)
    assert credit.acquire(100), "none unacknowledged: it goes"
    waited = threading.Event()

    def second():
        assert credit.acquire(1)
        waited.set()

    thread = threading.Thread(target=second)
    thread.start()
    assert not waited.wait(0.1), "100 bytes unacknowledged is past the window"
    credit.ack(1)
    assert waited.wait(5)
    thread.join()


def test_acks_are_running_counts_and_a_cancel_wakes_a_waiting_sender():
    credit = Credit(items=2, size=1 << 20)
    assert credit.acquire(1) and credit.acquire(1)
    credit.ack(1)
    credit.ack(1)  # the same count again frees nothing more
    assert credit.acquire(1)
    result = []
    thread = threading.Thread(target=lambda: result.append(credit.acquire(1)))
    thread.start()
    thread.join(0.1)
    assert thread.is_alive()
    credit.cancel()
    thread.join(5)
    assert result == [False]


@pytest.mark.parametrize("received", [0, 3])
def test_an_ack_past_what_was_sent_frees_only_what_was_sent(received):
    credit = Credit(items=1, size=1 << 20)
    credit.ack(received)
    assert credit.acquire(1)
    credit.ack(received + 1)
    assert credit.acquire(1)
