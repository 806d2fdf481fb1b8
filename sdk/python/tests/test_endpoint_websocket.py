"""Websockets to an ``@asgi`` app, the runner's part: the app's messages
go as the task's items, the client's come from the connection's inbox by
QueueGet (``object_call`` frames, answered here as the worker answers them
with the controlplane's reply).

Served over a real websocket end to end: crates/levers9-cli/tests/endpoints.rs.
"""

import json
import struct
import time

from test_runner import make_worker  # noqa: F401

from levers9.wire import write_frame

APP = """
import json
from levers9 import asgi


class WebSocketDisconnect(Exception):
    # As Starlette's receive_text() raises it.
    pass


async def echo(scope, receive, send):
    if scope["type"] != "websocket":
        return
    assert (await receive())["type"] == "websocket.connect"
    if scope["path"] == "/refuse":
        await send({"type": "websocket.close", "code": 1008})
        return
    if scope["path"] == "/ignore":
        return
    await send({"type": "websocket.accept", "subprotocol": scope["subprotocols"][-1],
                "headers": [(b"x-app", b"caf\\xe9")]})
    await send({"type": "websocket.send", "text": json.dumps(
        {"path": scope["path"], "query": scope["query_string"].decode(), "subprotocols": scope["subprotocols"]})})
    try:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                print("disconnected", message["code"], message.get("reason", ""))
                if scope["path"] == "/starlette":
                    raise WebSocketDisconnect(message["code"])
                return
            if message.get("text") == "close":
                await send({"type": "websocket.close", "code": 4001, "reason": "asked to"})
                print("after close:", (await receive())["type"])
                return
            if message.get("text") == "big":
                await send({"type": "websocket.send", "bytes": bytes((1 << 20) + 1)})
            if "text" in message:
                await send({"type": "websocket.send", "text": "echo: " + message["text"]})
            else:
                await send({"type": "websocket.send", "bytes": message["bytes"][::-1]})
    finally:
        print("finally ran")


@asgi
def make_echo():
    return echo
"""

INBOX = "~inbox.0123abcd"


def open_websocket(worker, task_id, path, protocols="chat, superchat"):
    head = {
        "method": "GET", "path": path, "raw_path": path, "query_string": "q=1", "root_path": "/endpoint/w/api",
        "headers": [["sec-websocket-protocol", protocols]], "websocket": INBOX,
    }
    write_frame(worker.conn, {"type": "input", "task_id": task_id, "attempt": 1}, json.dumps(head).encode() + b"\n")


def client(*messages):
    """Inbox items: text for str, binary for bytes, the end for an int (its code)."""
    items = []
    for m in messages:
        if isinstance(m, str):
            items.append(b"t" + m.encode())
        elif isinstance(m, bytes):
            items.append(b"b" + m)
        else:
            items.append(b"d" + json.dumps({"code": m, "reason": "bye"}).encode())
    return items


class Connection:
    """Reads the runner's frames, answering its QueueGets with `inbox`'s items
    as they are given, as the controlplane does."""

    def __init__(self, worker):
        self.worker = worker
        self.waiting = []  # QueueGet calls not answered yet
        self.inbox = []

    def give(self, *items):
        self.inbox.extend(items)
        self._answer()

    def _answer(self):
        while self.waiting and self.inbox:
            call = self.waiting.pop(0)
            assert call["name"] == INBOX, call
            taken, self.inbox = self.inbox[: call["max_items"]], self.inbox[call["max_items"] :]
            body = b"".join(struct.pack(">I", len(i)) + i for i in taken)
            write_frame(self.worker.conn, {"type": "object_reply", "call_id": call["call_id"], "code": "OK"}, body)

    def next(self):
        """The next item or result frame, acknowledging items."""
        while True:
            header, body = self.worker.read()
            if header["type"] == "object_call":
                assert header["method"] == "QueueGet", header
                self.waiting.append(header)
                self._answer()
            elif header["type"] == "item":
                write_frame(
                    self.worker.conn, {"type": "ack", "task_id": header["task_id"], "received": header["index"] + 1}, b""
                )
                return header, body
            else:
                return header, body

    def printed(self):
        """What the app printed: its loop's thread is no task's, so it goes to
        the container's log (the runner's stdout) only."""
        assert self.worker.close() == 0
        return self.worker.process.stdout.read().decode()


def test_an_accepted_websocket_echoes_messages_both_ways_in_order(make_worker):  # noqa: F811
    worker = make_worker("make_echo", app=APP)
    worker.read()
    open_websocket(worker, "t1", "/ws")
    ws = Connection(worker)
    header, accept = ws.next()
    assert (header["type"], header["index"]) == ("item", 0)
    assert accept[:1] == b"a"
    accepted = json.loads(accept[1:])
    assert 0 <= accepted.pop("ran_ms") < 5000
    assert accepted == {"subprotocol": "superchat", "headers": [["x-app", "caf\u00e9"]]}
    _, hello = ws.next()
    assert json.loads(hello[1:]) == {"path": "/ws", "query": "q=1", "subprotocols": ["chat", "superchat"]}
    ws.give(*client("one", b"\x00\x01\x02", "three"))
    assert [ws.next()[1] for _ in range(3)] == [b"techo: one", b"b\x02\x01\x00", b"techo: three"]
    ws.give(*client("four"))
    assert ws.next()[1] == b"techo: four"
    # The client leaves: the app's receive says so, and its finally runs.
    ws.give(*client(1001))
    header, body = ws.next()
    assert (header["type"], header["state"], body) == ("result", "complete", b"6"), header
    printed = ws.printed()
    assert "disconnected 1001 bye" in printed and "finally ran" in printed, printed


def test_the_apps_close_goes_with_its_code_and_its_receive_then_says_disconnected(make_worker):  # noqa: F811
    worker = make_worker("make_echo", app=APP)
    worker.read()
    open_websocket(worker, "t1", "/ws")
    ws = Connection(worker)
    ws.next(), ws.next()
    ws.give(*client("close"))
    _, close = ws.next()
    assert close[:1] == b"c" and json.loads(close[1:]) == {"code": 4001, "reason": "asked to"}
    header, _ = ws.next()
    assert (header["type"], header["state"]) == ("result", "complete"), header
    assert "after close: websocket.disconnect" in ws.printed()


def test_a_refused_or_ignored_websocket_is_a_close_first_or_no_item(make_worker):  # noqa: F811
    worker = make_worker("make_echo", app=APP)
    worker.read()
    open_websocket(worker, "t1", "/refuse")
    ws = Connection(worker)
    _, refused = ws.next()
    assert refused[:1] == b"c" and json.loads(refused[1:])["code"] == 1008
    assert ws.next()[0]["state"] == "complete"
    open_websocket(worker, "t2", "/ignore")
    header, body = ws.next()
    assert (header["type"], header["task_id"], header["state"], body) == ("result", "t2", "complete", b"0")


def test_an_app_unwinding_with_websocketdisconnect_after_the_client_left_completes(make_worker):  # noqa: F811
    worker = make_worker("make_echo", app=APP)
    worker.read()
    open_websocket(worker, "t1", "/starlette")
    ws = Connection(worker)
    ws.next(), ws.next()
    ws.give(*client(1000))
    header, _ = ws.next()
    assert (header["type"], header["state"]) == ("result", "complete"), header
    assert "finally ran" in ws.printed()


def test_a_message_over_the_limit_fails_the_app_saying_so(make_worker):  # noqa: F811
    worker = make_worker("make_echo", app=APP)
    worker.read()
    open_websocket(worker, "t1", "/ws")
    ws = Connection(worker)
    ws.next(), ws.next()
    ws.give(*client("big"))
    header, _ = ws.next()
    assert (header["type"], header["state"]) == ("result", "error"), header
    assert header["message"] == (
        "ValueError: a websocket message of 1048577 bytes is over the 1048576-byte limit: send it in smaller messages"
    )


def test_a_cancel_stops_an_app_waiting_for_its_client(make_worker):  # noqa: F811
    worker = make_worker("make_echo", app=APP)
    worker.read()
    open_websocket(worker, "t1", "/ws")
    ws = Connection(worker)
    ws.next(), ws.next()
    write_frame(worker.conn, {"type": "cancel", "task_id": "t1"}, b"")
    header, _ = ws.next()
    assert (header["type"], header["state"]) == ("result", "cancelled"), header
    # The cancel reaches the app's coroutine on its loop as the result goes.
    time.sleep(0.5)
    assert "finally ran" in ws.printed()
