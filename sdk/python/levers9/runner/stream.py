"""Runs a generator function's input: its items go to the worker as they come.

# Guarantees
- Items leave in the order the generator yields them, as ``item`` frames
  numbered from 0, each after the output the function printed before it;
  then exactly one ``result`` frame: ``complete`` with the count of items,
  or ``error`` with what the generator raised (after the items before it).
- Back-pressure: an item is sent only while fewer than `WINDOW_ITEMS` items
  and fewer than `WINDOW_BYTES` bytes of items are unacknowledged (the
  worker passes the caller's ``ack`` frames on: items taken so far, a
  running count). One item always may go when none is unacknowledged, so an
  item larger than the byte window still moves. The generator is not asked
  for its next item before its previous one was sent, so it runs at most
  one item ahead of what the window lets through.
- A ``cancel`` for a running generator stops it at its next item (it is
  closed, so its ``finally`` blocks run) and its result says ``cancelled``:
  its container stays. A generator busy between two items is not
  interrupted; the function's timeout still bounds it.

Stdlib only, like the rest of the runner.
"""

from __future__ import annotations

import collections
import threading
import types

from . import execute, lifecycle, pickling

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import Callable, Dict, Iterator, Optional, Tuple

# Enough items in flight that a fast consumer never waits a round trip for
# the next one; few enough that a slow consumer holds back a generator soon.
WINDOW_ITEMS = 16
# Large items count by size too: a window of them waits in the worker, the
# controlplane and the hot state, and must stay a bounded amount of memory.
WINDOW_BYTES = 16 * 1024 * 1024
# The largest item, as for arguments and results: a gRPC message carries it.
MAX_ITEM_BYTES = 256 * 1024 * 1024


class Credit:
    """The window of unacknowledged items of one task."""

    def __init__(self, items: int = WINDOW_ITEMS, size: int = WINDOW_BYTES):
        self._items = items
        self._size = size
        self._cond = threading.Condition()
        self._unacked: collections.deque = collections.deque()  # sizes, oldest first
        self._unacked_bytes = 0
        self._acked = 0
        self.cancelled = False
        self._plain = False

    def acquire(self, size: int) -> bool:
        """Waits until an item of `size` bytes may be sent and counts it sent;
        False if the task was cancelled meanwhile."""
        with self._cond:
            while not self.cancelled and self._unacked and self._full():
                self._cond.wait()
            if self.cancelled:
                return False
            self._unacked.append(size)
            self._unacked_bytes += size
            return True

    def _full(self) -> bool:
        return len(self._unacked) >= self._items or self._unacked_bytes >= self._size

    def ack(self, received: int) -> None:
        """The caller has taken `received` items so far."""
        with self._cond:
            while self._acked < received and self._unacked:
                self._unacked_bytes -= self._unacked.popleft()
                self._acked += 1
            self._cond.notify_all()

    def cancel(self) -> bool:
        """Stops the stream at its next item; False for a call that turned
        out not to stream, which cannot be stopped so."""
        with self._cond:
            if self._plain:
                return False
            self.cancelled = True
            self._cond.notify_all()
            return True

    def not_a_stream(self) -> bool:
        """Marks the call as a plain one (later cancels are refused); False
        if it was cancelled already."""
        with self._cond:
            self._plain = not self.cancelled
            return self._plain


class Streams:
    """The credit of each generator task the runner holds, by task id."""

    def __init__(self):
        self._lock = threading.Lock()
        self._credits: Dict[str, Credit] = {}

    def open(self, task_id: str) -> Credit:
        credit = Credit()
        with self._lock:
            self._credits[task_id] = credit
        return credit

    def close(self, task_id: str, credit: Credit) -> None:
        with self._lock:
            # A retry of the same task on this container may have opened
            # its own credit already.
            if self._credits.get(task_id) is credit:
                del self._credits[task_id]

    def get(self, task_id: str) -> Optional[Credit]:
        with self._lock:
            return self._credits.get(task_id)

    def ack(self, task_id: str, received: int) -> None:
        credit = self.get(task_id)
        if credit is not None:
            credit.ack(received)

    def cancel(self, task_id: str) -> bool:
        """Stops a generator task at its next item; False if it is not one."""
        credit = self.get(task_id)
        return credit is not None and credit.cancel()


def items(produced) -> Iterator:
    """The items of a generator or an async generator.

    An async generator's steps run on an event loop of this thread, one
    `__anext__` at a time, so waiting for credit between items blocks no
    other task's loop.
    """
    if not isinstance(produced, types.AsyncGeneratorType):
        yield from produced
        return
    import asyncio

    loop = asyncio.new_event_loop()
    try:
        while True:
            try:
                item = loop.run_until_complete(produced.__anext__())
            except StopAsyncIteration:
                return
            yield item
    finally:
        # Runs the async generator's own finally blocks, also when this one
        # is closed early (a cancel, an error sending an item).
        try:
            loop.run_until_complete(produced.aclose())
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def run(send: Callable[[dict, bytes], None], flush_output: Callable[[], None], credit: Credit, fn: Callable, name: str, task_id: str, body: bytes) -> Tuple[dict, bytes]:
    """Sends the items of one generator input; returns its result frame."""
    count = 0
    try:
        args, kwargs = execute.unpickle_input(body)
        if isinstance(fn, lifecycle.Lifecycle) and not lifecycle.streams(args):
            # A class's method called for its value, in a container whose
            # class also has methods that yield: a plain call.
            return _returned(credit, task_id, name, lambda: fn(*args, **kwargs))
        stream = items(fn(*args, **kwargs))
        try:
            for item in stream:
                payload = _pickle_item(name, count, item)
                if not credit.acquire(len(payload)):
                    break
                # What it printed before yielding reaches the caller first.
                flush_output()
                send({"type": "item", "task_id": task_id, "index": count}, payload)
                count += 1
                if credit.cancelled:
                    break
        finally:
            stream.close()
    except BaseException as e:  # the function's SystemExit is its failure, not ours
        return execute.error_result(task_id, e)
    if credit.cancelled:
        message = f"cancelled by the caller after {count} items"
        return {"type": "result", "task_id": task_id, "state": "cancelled", "message": message}, b""
    return execute.complete_result(task_id, name, count)


def _returned(credit: Credit, task_id: str, name: str, call: Callable[[], object]) -> Tuple[dict, bytes]:
    """The result of a plain `call`; once it runs, a cancel is refused as
    for any plain call, since it cannot be stopped at an item."""
    if not credit.not_a_stream():
        return {"type": "result", "task_id": task_id, "state": "cancelled", "message": "cancelled before it started"}, b""
    try:
        value = execute.settled(call())
    except BaseException as e:  # the method's SystemExit is its failure, not ours
        return execute.error_result(task_id, e)
    return execute.complete_result(task_id, name, value)


def _pickle_item(name: str, index: int, item) -> bytes:
    try:
        payload = pickling.dumps(item)
    except Exception as e:  # pickling raises anything: TypeError, PicklingError, ...
        raise TypeError(
            f"item {index} of {name} is a {type(item).__module__}.{type(item).__qualname__}, "
            f"which cannot be pickled ({type(e).__name__}: {e}); yield plain data instead"
        ) from None
    if len(payload) > MAX_ITEM_BYTES:
        raise ValueError(
            f"item {index} of {name} is {len(payload)} bytes pickled, over the {MAX_ITEM_BYTES}-byte "
            f"limit: yield smaller items, or write large data to a Volume and yield its path"
        )
    return payload
