"""Inputs of web endpoints: keyword arguments as a JSON object, the value
returned as JSON; or, for an ``@asgi`` app, the whole HTTP request (see
`asgi_host`).

The controlplane's endpoint gateway sends the request's arguments as the
JSON object itself. A pickle (what ``.remote()`` sends) starts with the
PROTO opcode, byte 0x80, never ``{``, so the first byte tells them apart
and one container serves both.
"""

from __future__ import annotations

import json
import sys

from . import execute

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import Callable, Tuple


def is_json(body: bytes) -> bool:
    return body[:1] == b"{"


def call(fn: Callable, body: bytes):
    """Calls `fn` with the object's members as keyword arguments (an
    ``@asgi`` function's requests go to `asgi_host.run` instead)."""
    try:
        kwargs = json.loads(body)
    except ValueError as e:
        raise ValueError(f"the request's arguments are not valid JSON: {e}") from e
    return execute.settled(fn(**kwargs))


def complete_result(task_id: str, function_name: str, value) -> Tuple[dict, bytes]:
    """The result frame with the value as JSON; a value JSON cannot hold is an error."""
    # Looked up, not imported: only an @asgi container loads the host (and asyncio).
    asgi_host = sys.modules.get(f"{__package__}.asgi_host")
    if asgi_host is not None and isinstance(value, asgi_host.AsgiResponse):
        return {"type": "result", "task_id": task_id, "state": "complete"}, value.encode()
    try:
        body = json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as e:
        problem = TypeError(
            f"{function_name} returned a {type(value).__module__}.{type(value).__qualname__}, "
            f"which is not JSON ({e}); an endpoint returns dicts, lists, strings, numbers, "
            f"booleans or None"
        )
        return execute.error_result(task_id, problem, traceback_text=str(problem))
    return {"type": "result", "task_id": task_id, "state": "complete"}, body
