"""`FunctionCall`: a handle on a spawned call, which outlives the caller's connection."""

from __future__ import annotations

from typing import Optional

from .aio import AioMethod


class FunctionCall:
    """A call started with ``f.spawn(...)``.

    It only holds the task id, so it can be stored or sent elsewhere and
    picked up with ``FunctionCall.from_id(task_id)``. Interrupting ``get()``
    (Ctrl-C, a cancelled ``get.aio``) stops waiting, never the task: use
    ``cancel()`` for that.
    """

    def __init__(self, task_id: str):
        self.task_id = task_id
        self.get = AioMethod(self._get, FunctionCall._get.__doc__ or "")
        self.cancel = AioMethod(self._cancel, FunctionCall._cancel.__doc__ or "")

    @property
    def object_id(self) -> str:
        """The task id (the name other SDKs use for it)."""
        return self.task_id

    @classmethod
    def from_id(cls, task_id: str) -> "FunctionCall":
        return cls(task_id)

    def _get(self, cancellation, /, timeout: Optional[float] = None):
        """Waits for the result (printing the call's output from now on) and returns
        it, or raises what the function raised. TimeoutError after `timeout` seconds."""
        from . import invoke
        from .client import get_client

        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive seconds or None; got {timeout!r}")
        return invoke.wait_for_task(get_client(), self.task_id, timeout, cancellation)

    def _cancel(self, cancellation, /) -> None:
        """Cancels the task if it has not finished; get() then raises TaskCancelled."""
        from . import invoke
        from .client import get_client

        invoke.cancel_task(get_client(), self.task_id)

    def __reduce__(self):
        return (FunctionCall, (self.task_id,))

    def __repr__(self):
        return f"FunctionCall({self.task_id!r})"
