"""Runs one input of the function and turns the outcome into a result frame."""

from __future__ import annotations

import os
from collections.abc import Awaitable

from . import pickling

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import Callable, Tuple

_RUNNER_DIR = os.path.dirname(os.path.abspath(__file__))
# asyncio's own frames are left out of tracebacks too; its directory is the
# standard library's, found without importing asyncio (a slow import that
# only async functions need).
_ASYNCIO_DIR = os.path.join(os.path.dirname(os.path.abspath(os.__file__)), "asyncio")


def call_function(fn: Callable, body: bytes):
    """Unpickles (args, kwargs) and calls `fn`; coroutines run to completion here.

    Each task thread runs its own event loop (asyncio.run), so an async
    function with concurrency > 1 runs its inputs side by side in threads.
    """
    args, kwargs = unpickle_input(body)
    return settled(fn(*args, **kwargs))


def settled(value):
    """`value`, or what it resolves to if it is awaitable (run to completion
    on an event loop of this thread)."""
    if isinstance(value, Awaitable):
        import asyncio

        value = asyncio.run(_wait_for(value))
    return value


def unpickle_input(body: bytes) -> Tuple[tuple, dict]:
    """The (args, kwargs) of an input."""
    try:
        return pickling.loads(body)
    except Exception as e:
        raise RuntimeError(
            f"the arguments cannot be unpickled in the container ({type(e).__name__}: {e}); "
            f"pass plain data, or make the modules they come from available in the image or the code directory"
        ) from e


async def _wait_for(awaitable):
    return await awaitable


def complete_result(task_id: str, function_name: str, value) -> Tuple[dict, bytes]:
    """The result frame for a value; an unpicklable value becomes an error."""
    try:
        body = pickling.dumps(value)
    except Exception as e:  # pickling raises anything: TypeError, PicklingError, ...
        problem = TypeError(
            f"{function_name} returned a {type(value).__module__}.{type(value).__qualname__}, "
            f"which cannot be pickled ({type(e).__name__}: {e}); return plain data instead"
        )
        return error_result(task_id, problem, traceback_text=formatted(problem, None))
    return {"type": "result", "task_id": task_id, "state": "complete"}, body


def error_result(task_id: str, exc: BaseException, traceback_text: str = "") -> Tuple[dict, bytes]:
    """The result frame for an exception the function raised."""
    if not traceback_text:
        traceback_text = formatted(exc, _user_frames(exc.__traceback__))
    message = describe(exc)
    try:
        body = pickling.dumps(exc)
    except Exception:
        # The caller still gets the message and traceback as a RemoteError.
        body = b""
    header = {
        "type": "result",
        "task_id": task_id,
        "state": "error",
        "message": message,
        "traceback": traceback_text,
    }
    return header, body


def describe(exc: BaseException) -> str:
    """The exception's last line, as a traceback ends (``ValueError: bad``)."""
    # Imported here, when something failed: a cold start spares ~3 ms.
    import traceback

    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def formatted(exc: BaseException, tb) -> str:
    """The exception as Python prints it, its traceback from `tb`."""
    import traceback

    return "".join(traceback.format_exception(type(exc), exc, tb))


def _user_frames(tb):
    """The traceback from the first frame that is not the runner's or asyncio's.

    The caller wants to see where their function failed, not how the runner
    called it.
    """
    first = tb
    while tb is not None:
        filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if not (filename.startswith(_RUNNER_DIR + os.sep) or filename.startswith(_ASYNCIO_DIR + os.sep)):
            return tb
        tb = tb.tb_next
    # Failed inside the runner itself (e.g. unpickling the arguments): show all.
    return first
