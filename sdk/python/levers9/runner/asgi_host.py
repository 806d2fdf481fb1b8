"""Hosts an ASGI app in the runner: an ``@asgi`` endpoint's requests.

The app is made once per container, on the first request, by calling the
decorated function, and runs on one event loop of its own, in a thread of
its own, so requests on several task threads (concurrency > 1) share it as
an ASGI server would. Its lifespan startup runs before the first request;
an app that does not speak the lifespan protocol is served without it.

A request arrives as a line of JSON (method, path, raw_path, query_string,
root_path, headers) followed by ``\\n`` and the body. An answer whose body
comes in one message goes back the same way (status, headers), as the
result. A streamed one (a body message with ``more_body``) goes as the
task's items instead, as it is sent: item 0 is the head line, ``\\n`` and
the first chunk, each later item one more chunk, within the runner's
window of unacknowledged items (`stream.Credit`), so a slow HTTP client
holds the app back rather than the answer piling up anywhere. Header names
and values are strings of one character per byte (Latin-1).

A head with ``"websocket"`` is a websocket connection's instead, served
as a ``websocket`` scope with its messages as items both ways (see
`asgi_websocket`).

A cancel (the HTTP client went away) cancels the app's request: an
``await`` in it raises ``CancelledError``, its ``finally`` blocks run, and
the result says ``cancelled``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
import time
from typing import Callable, Optional, Tuple

from . import execute, json_input

# How long the app's lifespan startup may take.
_STARTUP_SECONDS = 300.0
# How often a task thread waiting for its request looks for a cancel (a
# Credit wakes only its own senders).
_CANCEL_CHECK_SECONDS = 0.2


class AsgiResponse:
    """The app's answer, encoded for the result frame."""

    def __init__(self, status: int, headers: list, body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    def encode(self) -> bytes:
        return _head(self.status, self.headers) + self.body


def _head(status: int, headers: list) -> bytes:
    return json.dumps({"status": status, "headers": headers}, separators=(",", ":")).encode("utf-8") + b"\n"


class _Items:
    """Sends a streamed answer's chunks as the task's items."""

    def __init__(self, send: Callable, flush_output: Callable, credit, task_id: str):
        self._send = send
        self._flush_output = flush_output
        self.credit = credit
        self._task_id = task_id
        self.count = 0
        # When the input started: a websocket's accept says how long ago.
        self.started = time.monotonic()

    def put(self, payload: bytes) -> None:
        """Blocks until the window lets the item go; CancelledError once the task is cancelled."""
        if not self.credit.acquire(len(payload)):
            raise asyncio.CancelledError()
        # What the app printed before this chunk reaches `levers9 task logs` first.
        self._flush_output()
        self._send({"type": "item", "task_id": self._task_id, "index": self.count}, payload)
        self.count += 1


class _Host:
    def __init__(self, factory: Callable):
        app = factory()
        if not callable(app):
            raise TypeError(
                f"{factory.__qualname__} returned a {type(app).__name__}, not an ASGI app: "
                f"an @asgi function returns the app, e.g. a FastAPI() or Starlette() instance"
            )
        self.app = app
        self.loop = asyncio.new_event_loop()
        thread = threading.Thread(target=self.loop.run_forever, name="levers9-asgi", daemon=True)
        thread.start()
        self._lifespan = asyncio.run_coroutine_threadsafe(self._start(), self.loop)
        self._lifespan.result(timeout=_STARTUP_SECONDS)

    async def _start(self) -> None:
        """Runs the lifespan startup; its task stays to hold the app's lifespan open."""
        started = self.loop.create_future()
        inbox: asyncio.Queue = asyncio.Queue()
        await inbox.put({"type": "lifespan.startup"})

        async def send(message):
            kind = message.get("type")
            if kind == "lifespan.startup.complete" and not started.done():
                started.set_result(None)
            elif kind == "lifespan.startup.failed" and not started.done():
                started.set_exception(RuntimeError(f"the app's startup failed: {message.get('message', '')}"))

        async def run():
            scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}
            try:
                await self.app(scope, inbox.get, send)
            except Exception:
                pass  # an app without lifespan support may raise on the scope
            # Returned or raised without completing its startup: an app
            # without lifespan support, served without it.
            if not started.done():
                started.set_result(None)

        self._lifespan_task = self.loop.create_task(run())
        await started

    def handle(self, body: bytes, items: _Items) -> Optional[AsgiResponse]:
        """The app's answer to the request `body`; None when it was streamed as `items`."""
        future = asyncio.run_coroutine_threadsafe(_request(self.app, body, items, self.loop), self.loop)
        while True:
            try:
                return future.result(timeout=_CANCEL_CHECK_SECONDS)
            except concurrent.futures.TimeoutError:
                if items.credit.cancelled:
                    # Cancels the app's task on its loop; result() then raises CancelledError.
                    future.cancel()


async def _request(app, body: bytes, items: _Items, loop) -> Optional[AsgiResponse]:
    split = body.index(b"\n")
    head = json.loads(body[:split])
    if "websocket" in head:
        from . import asgi_websocket

        await asgi_websocket.serve(app, head, items, loop)
        return None  # its messages were its items
    request_body = body[split + 1 :]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": head["method"],
        "scheme": "http",
        "path": head["path"],
        "raw_path": head["raw_path"].encode("latin-1"),
        "query_string": head["query_string"].encode("latin-1"),
        "root_path": "",
        "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in head["headers"]],
        "client": None,
        "server": None,
        "state": {},
    }
    received = False
    done = asyncio.Event()

    async def receive():
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": request_body, "more_body": False}
        # The whole request was sent; the next thing is the end of the call.
        await done.wait()
        return {"type": "http.disconnect"}

    status, headers, chunks = 500, [], []
    streamed = False

    async def send(message):
        nonlocal status, headers, streamed
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = [
                (bytes(k).decode("latin-1"), bytes(v).decode("latin-1")) for k, v in message.get("headers", [])
            ]
        elif message["type"] == "http.response.body":
            chunk = bytes(message.get("body", b""))
            more = message.get("more_body", False)
            if not (streamed or more):
                chunks.append(chunk)
                return
            if not streamed:
                streamed = True
                chunk = _head(status, headers) + b"".join(chunks) + chunk
            elif not chunk:
                return  # an empty last chunk: the end is the result
            # Waiting for credit must not stop the loop the other requests share.
            await loop.run_in_executor(None, items.put, chunk)

    try:
        await app(scope, receive, send)
    finally:
        done.set()
    return None if streamed else AsgiResponse(status, headers, b"".join(chunks))


def run(send: Callable, flush_output: Callable, credit, fn: Callable, name: str, task_id: str, body: bytes) -> Tuple[dict, bytes]:
    """Runs one input of an ``@asgi`` function; returns its result frame.

    A request's streamed answer goes as items (see the module's doc); a
    ``.remote()`` of the function (a pickled input) calls it as any other.
    """
    items = _Items(send, flush_output, credit, task_id)
    try:
        if json_input.is_json(body):
            answer = host_of(fn).handle(body, items)
        else:
            return execute.complete_result(task_id, name, execute.call_function(fn, body))
    except BaseException as e:  # the app's SystemExit is its failure, not ours
        if credit.cancelled and isinstance(e, (asyncio.CancelledError, concurrent.futures.CancelledError)):
            message = f"cancelled by the caller after {items.count} items"
            return {"type": "result", "task_id": task_id, "state": "cancelled", "message": message}, b""
        return execute.error_result(task_id, e)
    if answer is None:
        # Streamed: the items were the answer; the result only ends it.
        return {"type": "result", "task_id": task_id, "state": "complete"}, str(items.count).encode()
    return json_input.complete_result(task_id, name, answer)


_hosts: dict = {}
_hosts_lock = threading.Lock()


def host_of(factory: Callable) -> _Host:
    """The container's one host of the app `factory` makes, made on first use."""
    with _hosts_lock:
        host: Optional[_Host] = _hosts.get(factory)
        if host is None:
            host = _hosts[factory] = _Host(factory)
        return host
