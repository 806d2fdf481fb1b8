"""What a task's outcome means for the caller: a value, or an exception to raise.

Works on anything shaped like the TaskOutcome message (state, payload,
traceback, message, task_id). Imports the generated code only when called,
as an outcome comes over gRPC: importing levers9 loads no protobuf.
"""

from __future__ import annotations

from typing import Any, Tuple

import cloudpickle

from .errors import RemoteError, RemoteTraceback, TaskCancelled, TaskFailed, TaskTimeout


def outcome_value(outcome) -> Tuple[bool, Any]:
    """(True, the return value) or (False, the exception the caller should see)."""
    from .v1 import function_pb2 as pb
    from .words import word

    state = outcome.state
    if state == pb.FINAL_TASK_STATE_COMPLETE:
        try:
            return True, cloudpickle.loads(outcome.payload)
        except Exception as e:  # unpickling raises anything the pickled classes do
            return False, RemoteError(
                f"the result of task {outcome.task_id} cannot be unpickled here ({type(e).__name__}: {e}); "
                f"the modules its classes come from must be importable in this process"
            )
    if state == pb.FINAL_TASK_STATE_ERROR:
        return False, remote_exception(outcome)
    if state == pb.FINAL_TASK_STATE_TIMEOUT:
        return False, TaskTimeout(outcome.message or f"task {outcome.task_id} ran past its timeout")
    if state == pb.FINAL_TASK_STATE_CANCELLED:
        return False, TaskCancelled(outcome.message or f"task {outcome.task_id} was cancelled")
    shown = word(pb.FinalTaskState, state)
    return False, TaskFailed(outcome.message or f"task {outcome.task_id} ended in state {shown!r}")


def remote_exception(outcome) -> BaseException:
    """The function's own exception with the remote traceback as its cause, when
    it can be brought back; otherwise a RemoteError carrying message and traceback."""
    exc = None
    if outcome.payload:
        try:
            exc = cloudpickle.loads(outcome.payload)
        except Exception:
            exc = None  # e.g. a class this process cannot import; fall back below
    traceback_text = outcome.traceback
    # Only ordinary exceptions are re-raised as themselves: a SystemExit or
    # KeyboardInterrupt from the container must not end the caller's process.
    if isinstance(exc, Exception):
        if traceback_text:
            exc.__cause__ = RemoteTraceback(traceback_text)
        return exc
    message = outcome.message or "the function failed"
    if traceback_text:
        return RemoteError(f"{message}\n\nRemote traceback:\n{traceback_text.rstrip()}")
    return RemoteError(message)
