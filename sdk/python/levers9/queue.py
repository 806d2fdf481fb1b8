"""``Queue``: a named FIFO queue of the workspace, shared by callers and containers.

    from levers9 import Queue

    q = Queue.from_name("jobs", create_if_missing=True)
    q.put({"id": 1})
    q.put_many([2, 3])
    q.get()                       # {'id': 1}; waits while the queue is empty
    q.get(timeout=5)              # raises queue.Empty after 5 s with nothing
    q.get(block=False)            # raises queue.Empty at once if empty
    q.get_many(10)                # up to 10 items, oldest first

``get`` raises the standard library's ``queue.Empty`` when nothing came
(as ``queue.Queue`` does), since None is a value a queue can hold. Items are
pickled with cloudpickle. The contents live in the controlplane's hot state:
fast and shared, but not durable storage. Limits: an item up to 1 MiB
pickled, 100,000 items per queue (the controlplane's ``controlplane.objects``
settings); a put over a limit raises ``ControlplaneError`` and adds nothing.
"""

from __future__ import annotations

import queue as _stdlib_queue
import time
from typing import Any, Iterable, List, Optional

import cloudpickle

from . import named


def _item(value: Any) -> bytes:
    try:
        return cloudpickle.dumps(value)
    except Exception as e:  # pickling raises anything the objects' __reduce__ does
        raise TypeError(f"the queue item cannot be pickled ({type(e).__name__}: {e}); put plain data") from e


class Queue:
    """A named queue of the caller's workspace; get one with ``Queue.from_name``."""

    def __init__(self, name: str, *, create_if_missing: bool = False):
        self.name = name
        self._create = create_if_missing
        self._looked_up = False

    def __repr__(self):
        return f"Queue({self.name!r})"

    @classmethod
    def from_name(cls, name: str, *, create_if_missing: bool = False) -> "Queue":
        """The queue called `name`. Lazy, as in Modal: it is looked up (and created
        with create_if_missing) on first use, where a missing one raises
        ControlplaneError with code NOT_FOUND; so a module may make one at import,
        also in a function's container."""
        return cls(name, create_if_missing=create_if_missing)

    def _backend(self):
        backend = named.backend()
        if not self._looked_up:
            backend.look_up("queue", self.name, self._create)
            self._looked_up = True
        return backend

    @staticmethod
    def delete(name: str) -> None:
        """Deletes the queue called `name` and every item in it."""
        named.backend().delete("queue", name)

    def put(self, value: Any) -> None:
        """Appends value to the tail."""
        self._backend().queue_put(self.name, [_item(value)])

    def put_many(self, values: Iterable[Any]) -> None:
        """Appends values in order, in one call: all or none."""
        items = [_item(v) for v in values]
        if items:
            self._backend().queue_put(self.name, items)

    def get(self, block: bool = True, timeout: Optional[float] = None) -> Any:
        """Takes the head. Waits while the queue is empty unless block is False, for at
        most timeout seconds if given (None: forever); raises queue.Empty when nothing came."""
        items = self._take(1, block, timeout)
        if not items:
            raise _stdlib_queue.Empty()
        return items[0]

    def get_many(self, n: int, block: bool = True, timeout: Optional[float] = None) -> List[Any]:
        """Takes up to n items, oldest first, waiting like get for the first; [] when nothing came."""
        if n < 1:
            raise ValueError(f"get_many takes at least 1 item; got n={n}")
        return self._take(n, block, timeout)

    def _take(self, n: int, block: bool, timeout: Optional[float]) -> List[Any]:
        if timeout is not None and timeout < 0:
            raise ValueError(f"timeout must not be negative; got {timeout}")
        backend = self._backend()
        if not block:
            return [cloudpickle.loads(i) for i in backend.queue_get(self.name, n, 0)]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = named.MAX_WAIT_SECONDS if deadline is None else deadline - time.monotonic()
            items = backend.queue_get(self.name, n, max(left, 0.0))
            if items or (deadline is not None and time.monotonic() >= deadline):
                return [cloudpickle.loads(i) for i in items]

    def len(self) -> int:
        return self._backend().length("queue", self.name)

    def clear(self) -> None:
        """Removes every item; the queue stays."""
        self._backend().clear("queue", self.name)

    def __len__(self) -> int:
        return self.len()
