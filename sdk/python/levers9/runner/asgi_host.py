"""Hosts an ASGI app in the runner: an ``@asgi`` endpoint's requests.

The app is made once per container, on the first request, by calling the
decorated function, and runs on one event loop of its own, in a thread of
its own, so requests on several task threads (concurrency > 1) share it as
an ASGI server would. Its lifespan startup runs before the first request;
an app that does not speak the lifespan protocol is served without it.

A request arrives as a line of JSON (method, path, raw_path, query_string,
root_path, headers) followed by ``\\n`` and the body; the answer goes back
the same way (status, headers), the body whole. Header names and values
are strings of one character per byte (Latin-1).
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Callable, Optional

# How long the app's lifespan startup may take.
_STARTUP_SECONDS = 300.0


class AsgiResponse:
    """The app's answer, encoded for the result frame."""

    def __init__(self, status: int, headers: list, body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    def encode(self) -> bytes:
        head = json.dumps({"status": self.status, "headers": self.headers}, separators=(",", ":"))
        return head.encode("utf-8") + b"\n" + self.body


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

    def handle(self, body: bytes) -> AsgiResponse:
        return asyncio.run_coroutine_threadsafe(_request(self.app, body), self.loop).result()


async def _request(app, body: bytes) -> AsgiResponse:
    split = body.index(b"\n")
    head = json.loads(body[:split])
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

    async def send(message):
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = [
                (bytes(k).decode("latin-1"), bytes(v).decode("latin-1")) for k, v in message.get("headers", [])
            ]
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body", b"")))

    try:
        await app(scope, receive, send)
    finally:
        done.set()
    return AsgiResponse(status, headers, b"".join(chunks))


_hosts: dict = {}
_hosts_lock = threading.Lock()


def host_of(factory: Callable) -> _Host:
    """The container's one host of the app `factory` makes, made on first use."""
    with _hosts_lock:
        host: Optional[_Host] = _hosts.get(factory)
        if host is None:
            host = _hosts[factory] = _Host(factory)
        return host
