"""A websocket to an ``@asgi`` app: one connection is one input, served
by the app as a ``websocket`` scope.

The input's head (see `asgi_host`) is an HTTP request's with
``"websocket"``: the name of the connection's inbox. Both directions carry
one message each way per unit, its first byte saying what it is:

- The app's messages go as the task's items, within the window of
  unacknowledged items (`stream.Credit`), as a streamed answer's chunks
  do: ``a`` and JSON ``{"subprotocol", "headers", "ran_ms"}`` (its accept;
  ``ran_ms``: how long the input had run, so the controlplane closes the
  connection before the worker's clock for the timeout ends), ``t`` and
  UTF-8 text, ``b`` and bytes, ``c`` and JSON ``{"code", "reason"}`` (its
  close). Item 0 is the accept (or a close, which refuses the connection).
- The client's messages are the items of the inbox, a queue in the
  controlplane's hot state that a thread of this connection takes from
  with QueueGet, through the worker, as ``levers9.Queue.get`` does: ``t``
  and ``b`` as above, and last ``d`` and JSON ``{"code", "reason"}``: the
  connection ended (the app's ``websocket.disconnect``).

An app that raises because its client left (Starlette's
``WebSocketDisconnect`` from ``receive_text()``, or the `ClientDisconnected`
a ``send`` raises once the client has gone) ends its task as complete: that
is how such apps unwind.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Callable, Optional

from .. import named

# The largest message either way; the controlplane's MAX_MESSAGE.
MAX_MESSAGE = 1 << 20
# The client's messages taken from the inbox that the app has not received
# yet, at most: past it the inbox fills, and the controlplane stops reading
# the client's socket.
_BUFFERED = 64
# One QueueGet's wait; a connection's thread ends at most this long after it.
_WAIT_SECONDS = 2.0


class ClientDisconnected(OSError):
    """Raised by ``send`` once the client has closed the connection or gone
    (the ASGI spec's OSError for a send on a closed connection)."""


class _Inbox:
    """Takes the client's messages from the inbox on a thread of its own and
    hands them to the app's ``receive`` on the loop."""

    def __init__(self, name: str, loop: asyncio.AbstractEventLoop, take: Optional[Callable] = None):
        self._name = name
        self._loop = loop
        self._messages: asyncio.Queue = asyncio.Queue()
        self._cond = threading.Condition()
        self._buffered = 0
        self._stopped = False
        # Set on the thread when the end of the connection is read.
        self.ended = False
        self._take = take or (lambda n, wait: named.backend().queue_get(name, n, wait))
        threading.Thread(target=self._run, name="levers9-websocket", daemon=True).start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    async def get(self) -> dict:
        message = await self._messages.get()
        with self._cond:
            self._buffered -= 1
            self._cond.notify_all()
        return message

    def _room(self) -> int:
        """Waits for room for a message; how many fit (0 once stopped)."""
        with self._cond:
            while not self._stopped and self._buffered >= _BUFFERED:
                self._cond.wait()
            return 0 if self._stopped else _BUFFERED - self._buffered

    def _run(self) -> None:
        try:
            while not self.ended:
                room = self._room()
                if not room:
                    return
                for item in self._take(room, _WAIT_SECONDS):
                    self._deliver(_decode(item))
                    if self.ended:
                        return
        except Exception as e:  # the worker or the controlplane failed: the app must not wait forever
            self._deliver({"type": "websocket.disconnect", "code": 1011, "reason": f"the client's messages cannot be read: {e}"})

    def _deliver(self, message: dict) -> None:
        with self._cond:
            self._buffered += 1
        if message["type"] == "websocket.disconnect":
            self.ended = True
        self._loop.call_soon_threadsafe(self._messages.put_nowait, message)


def _decode(item: bytes) -> dict:
    kind, data = item[:1], item[1:]
    if kind == b"t":
        return {"type": "websocket.receive", "text": data.decode("utf-8")}
    if kind == b"b":
        return {"type": "websocket.receive", "bytes": bytes(data)}
    if kind == b"d":
        end = json.loads(data)
        return {"type": "websocket.disconnect", "code": int(end.get("code", 1005)), "reason": end.get("reason", "")}
    raise ValueError(f"a message of unknown kind {kind!r} in the websocket's inbox")


def _scope(head: dict) -> dict:
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in head["headers"]]
    offered = b",".join(v for k, v in headers if k == b"sec-websocket-protocol")
    return {
        "type": "websocket",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "scheme": "ws",
        "path": head["path"],
        "raw_path": head["raw_path"].encode("latin-1"),
        "query_string": head["query_string"].encode("latin-1"),
        "root_path": "",
        "headers": headers,
        "client": None,
        "server": None,
        "subprotocols": [p.strip().decode("latin-1") for p in offered.split(b",") if p.strip()],
        "state": {},
    }


def _json(kind: bytes, value: dict) -> bytes:
    return kind + json.dumps(value, separators=(",", ":")).encode("utf-8")


def _message(message: dict) -> bytes:
    """A ``websocket.send`` message's item."""
    text, data = message.get("text"), message.get("bytes")
    if text is not None:
        item = b"t" + text.encode("utf-8")
    elif data is not None:
        item = b"b" + bytes(data)
    else:
        raise ValueError("a websocket.send message holds neither 'text' nor 'bytes'")
    if len(item) - 1 > MAX_MESSAGE:
        raise ValueError(
            f"a websocket message of {len(item) - 1} bytes is over the {MAX_MESSAGE}-byte limit: "
            f"send it in smaller messages"
        )
    return item


async def serve(app, head: dict, items, loop: asyncio.AbstractEventLoop) -> None:
    """Runs the app on the connection; its messages go as `items`."""
    inbox = _Inbox(head["websocket"], loop)
    state = {"connect_sent": False, "accepted": False, "closed": None}

    async def receive() -> dict:
        if not state["connect_sent"]:
            state["connect_sent"] = True
            return {"type": "websocket.connect"}
        if state["closed"] is not None:
            # The app closed it: nothing more comes.
            return state["closed"]
        return await inbox.get()

    async def send(message: dict) -> None:
        kind = message.get("type")
        if state["closed"] is not None or (inbox.ended and kind != "websocket.close"):
            raise ClientDisconnected(f"{kind}: the websocket is closed")
        if kind == "websocket.accept":
            if state["accepted"]:
                raise RuntimeError("websocket.accept: the websocket was accepted already")
            headers = [(bytes(k).decode("latin-1"), bytes(v).decode("latin-1")) for k, v in message.get("headers", [])]
            ran_ms = int((time.monotonic() - items.started) * 1000)
            item = _json(b"a", {"subprotocol": message.get("subprotocol"), "headers": headers, "ran_ms": ran_ms})
            state["accepted"] = True
        elif kind == "websocket.send":
            if not state["accepted"]:
                raise RuntimeError("websocket.send before websocket.accept: accept the websocket first")
            item = _message(message)
        elif kind == "websocket.close":
            code = int(message.get("code") or 1000)
            item = _json(b"c", {"code": code, "reason": message.get("reason") or ""})
            state["closed"] = {"type": "websocket.disconnect", "code": code}
        else:
            raise ValueError(
                f"{kind!r} is not a message for a websocket: send websocket.accept, websocket.send or websocket.close"
            )
        # Waiting for credit must not stop the loop the other connections share.
        await loop.run_in_executor(None, items.put, item)

    try:
        await app(_scope(head), receive, send)
    except Exception as e:
        # An app unwinding because its client left ends the connection as it should.
        if not (inbox.ended and (isinstance(e, ClientDisconnected) or type(e).__name__ == "WebSocketDisconnect")):
            raise
    finally:
        inbox.stop()
