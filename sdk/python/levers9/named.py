"""How ``Dict`` and ``Queue`` reach the controlplane: one call per operation.

A caller's process speaks gRPC to DictService and QueueService with its
workspace token (grpc is imported on first use, as for functions). Inside a
function's container there is neither grpc nor a token: the runner attaches
a `ContainerBackend`, which sends each call as an ``object_call`` frame to
the worker's container server; the worker makes the call for the container,
in the container's workspace. Keys and values arrive here already pickled;
this module only moves bytes.
"""

from __future__ import annotations

import struct
import threading

from .errors import ControlplaneError, Levers9Error

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import Callable, Dict, List, Optional, Tuple

# One QueueGet waits at most this long on the controlplane (its MAX_WAIT);
# longer waits are several calls.
MAX_WAIT_SECONDS = 60.0
# On top of a blocking get's wait, for the answer to come back.
_ANSWER_MARGIN_SECONDS = 30.0


class GrpcBackend:
    """The operations over the caller's gRPC client."""

    def __init__(self):
        from .client import get_client
        from .v1 import dict_pb2, dict_pb2_grpc, queue_pb2, queue_pb2_grpc

        self._client = get_client()
        self._dict = dict_pb2
        self._queue = queue_pb2
        self._stubs = {"dict": dict_pb2_grpc.DictServiceStub, "queue": queue_pb2_grpc.QueueServiceStub}

    def _call(self, kind: str, method: str, request, timeout: Optional[float] = None):
        if timeout is None:
            return self._client.call_service(self._stubs[kind], method, request)
        return self._client.call_service(self._stubs[kind], method, request, timeout=timeout)

    def look_up(self, kind: str, name: str, create: bool) -> bool:
        """Whether the call created it; NOT_FOUND without create."""
        if kind == "dict":
            reply = self._call(kind, "GetDict", self._dict.GetDictRequest(name=name, create_if_missing=create))
        else:
            reply = self._call(kind, "GetQueue", self._queue.GetQueueRequest(name=name, create_if_missing=create))
        return reply.created

    def listed(self, kind: str) -> List[Tuple[str, str, int]]:
        """(name, created_at, len) of each."""
        if kind == "dict":
            objects = self._call(kind, "ListDicts", self._dict.ListDictsRequest()).dicts
        else:
            objects = self._call(kind, "ListQueues", self._queue.ListQueuesRequest()).queues
        return [(o.name, o.created_at, o.len) for o in objects]

    def delete(self, kind: str, name: str) -> None:
        if kind == "dict":
            self._call(kind, "DeleteDict", self._dict.DeleteDictRequest(name=name))
        else:
            self._call(kind, "DeleteQueue", self._queue.DeleteQueueRequest(name=name))

    def length(self, kind: str, name: str) -> int:
        if kind == "dict":
            return self._call(kind, "DictLen", self._dict.DictLenRequest(name=name)).len
        return self._call(kind, "QueueLen", self._queue.QueueLenRequest(name=name)).len

    def clear(self, kind: str, name: str) -> None:
        if kind == "dict":
            self._call(kind, "DictClear", self._dict.DictClearRequest(name=name))
        else:
            self._call(kind, "QueueClear", self._queue.QueueClearRequest(name=name))

    def dict_put(self, name: str, entries: List[Tuple[bytes, bytes]], skip_existing: bool) -> int:
        request = self._dict.DictPutRequest(
            name=name,
            entries=[self._dict.DictEntry(key=k, value=v) for k, v in entries],
            skip_existing=skip_existing,
        )
        return self._call("dict", "DictPut", request).added

    def dict_get(self, name: str, key: bytes) -> Optional[bytes]:
        reply = self._call("dict", "DictGet", self._dict.DictGetRequest(name=name, key=key))
        return reply.value if reply.found else None

    def dict_pop(self, name: str, key: bytes) -> Optional[bytes]:
        reply = self._call("dict", "DictPop", self._dict.DictPopRequest(name=name, key=key))
        return reply.value if reply.found else None

    def dict_entries(self, name: str, keys_only: bool) -> List[Tuple[bytes, bytes]]:
        request = self._dict.DictEntriesRequest(name=name, keys_only=keys_only)
        return [(e.key, e.value) for e in self._call("dict", "DictEntries", request).entries]

    def queue_put(self, name: str, items: List[bytes]) -> int:
        return self._call("queue", "QueuePut", self._queue.QueuePutRequest(name=name, items=items)).len

    def queue_get(self, name: str, max_items: int, wait: float) -> List[bytes]:
        """Up to max_items, waiting up to `wait` seconds (at most MAX_WAIT_SECONDS) for the first."""
        wait_ms = max(0, int(min(wait, MAX_WAIT_SECONDS) * 1000))
        request = self._queue.QueueGetRequest(name=name, max_items=max_items, wait_ms=wait_ms)
        timeout = wait_ms / 1000 + _ANSWER_MARGIN_SECONDS
        return list(self._call("queue", "QueueGet", request, timeout=timeout).items)


_LENGTH = struct.Struct(">I")


def _pack(parts: List[bytes]) -> bytes:
    return b"".join(_LENGTH.pack(len(p)) + bytes(p) for p in parts)


def _unpack(body: bytes) -> List[bytes]:
    parts, at = [], 0
    while at < len(body):
        (n,) = _LENGTH.unpack_from(body, at)
        at += _LENGTH.size
        parts.append(body[at : at + n])
        at += n
    return parts


class _Pending:
    def __init__(self):
        self.done = threading.Event()
        self.reply: Tuple[dict, bytes] = ({}, b"")


class ContainerBackend:
    """The operations as frames to the worker, answered by ``object_reply``
    frames that the runner's reading thread hands to `answer`. Calls from
    several threads wait in parallel, matched by call_id."""

    def __init__(self, send: Callable[[dict, bytes], None]):
        self._send = send
        self._lock = threading.Lock()
        self._next_id = 0
        self._pending: Dict[int, _Pending] = {}
        self.serving = False

    def answer(self, header: dict, body: bytes) -> None:
        with self._lock:
            pending = self._pending.pop(int(header.get("call_id", -1)), None)
        if pending is not None:
            pending.reply = (header, body)
            pending.done.set()

    def _call(self, method: str, fields: dict, parts: List[bytes] = (), wait: float = 0.0) -> Tuple[dict, List[bytes]]:
        if not self.serving:
            raise Levers9Error(
                f"{method}: Dict and Queue calls in a container work once the function runs, "
                "not while its module is imported: make them inside the function (or a class's @enter)"
            )
        pending = _Pending()
        with self._lock:
            call_id = self._next_id
            self._next_id += 1
            self._pending[call_id] = pending
        try:
            self._send({"type": "object_call", "call_id": call_id, "method": method, **fields}, _pack(list(parts)))
            if not pending.done.wait(wait + _ANSWER_MARGIN_SECONDS):
                raise ControlplaneError(f"{method}: no answer from the worker within {wait + _ANSWER_MARGIN_SECONDS:g} s", code="DEADLINE_EXCEEDED")
        finally:
            with self._lock:
                self._pending.pop(call_id, None)
        header, body = pending.reply
        code = header.get("code", "OK")
        if code != "OK":
            raise ControlplaneError(f"{method} failed: {code}: {header.get('message', '')}", code=code)
        return header, _unpack(body)

    def look_up(self, kind: str, name: str, create: bool) -> bool:
        method = "GetDict" if kind == "dict" else "GetQueue"
        return bool(self._call(method, {"name": name, "create_if_missing": create})[0].get("created"))

    def listed(self, kind: str) -> List[Tuple[str, str, int]]:
        raise Levers9Error("listing dicts and queues is for callers: use `levers9 dict list` or `levers9 queue list`")

    def delete(self, kind: str, name: str) -> None:
        self._call("DeleteDict" if kind == "dict" else "DeleteQueue", {"name": name})

    def length(self, kind: str, name: str) -> int:
        return int(self._call("DictLen" if kind == "dict" else "QueueLen", {"name": name})[0].get("len", 0))

    def clear(self, kind: str, name: str) -> None:
        self._call("DictClear" if kind == "dict" else "QueueClear", {"name": name})

    def dict_put(self, name: str, entries: List[Tuple[bytes, bytes]], skip_existing: bool) -> int:
        parts = [part for entry in entries for part in entry]
        return int(self._call("DictPut", {"name": name, "skip_existing": skip_existing}, parts)[0].get("added", 0))

    def _found(self, method: str, name: str, key: bytes) -> Optional[bytes]:
        header, parts = self._call(method, {"name": name}, [key])
        return parts[0] if header.get("found") and parts else None

    def dict_get(self, name: str, key: bytes) -> Optional[bytes]:
        return self._found("DictGet", name, key)

    def dict_pop(self, name: str, key: bytes) -> Optional[bytes]:
        return self._found("DictPop", name, key)

    def dict_entries(self, name: str, keys_only: bool) -> List[Tuple[bytes, bytes]]:
        parts = self._call("DictEntries", {"name": name, "keys_only": keys_only})[1]
        return list(zip(parts[0::2], parts[1::2]))

    def queue_put(self, name: str, items: List[bytes]) -> int:
        return int(self._call("QueuePut", {"name": name}, items)[0].get("len", 0))

    def queue_get(self, name: str, max_items: int, wait: float) -> List[bytes]:
        wait_ms = max(0, int(min(wait, MAX_WAIT_SECONDS) * 1000))
        return self._call("QueueGet", {"name": name, "max_items": max_items, "wait_ms": wait_ms}, wait=wait_ms / 1000)[1]


_container: Optional[ContainerBackend] = None


def attach_container(send: Callable[[dict, bytes], None]) -> ContainerBackend:
    """Called by the runner: from now on this process's calls go through the worker."""
    global _container
    _container = ContainerBackend(send)
    return _container


def answer(header: dict, body: bytes) -> None:
    """Called by the runner's reading thread with each ``object_reply`` frame."""
    if _container is not None:
        _container.answer(header, body)


def backend():
    """The container's backend inside a function's container; otherwise one
    for the controlplane and token configured now (resolved on every
    operation, like function calls, so a changed LEVERS9_TOKEN applies)."""
    if _container is not None:
        return _container
    return GrpcBackend()
