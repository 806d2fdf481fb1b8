"""Calling a stub: Call (remote), the Run stream (map), spawn and waiting for a task.

# Guarantees
- One `remote` is one Call (start and input in its request, events back);
  no request stream, so no thread of grpc's per call.
- One Run stream per `map` call. The first request is RunStart;
  inputs follow with their position as index, those ready together in one
  RunInputs message (a lone one as RunInput); the stream is half-closed
  after the last input. Results that are ready together come
  several to an event (`batch_results`), so the caller wakes once for them.
- At most `MAX_IN_FLIGHT` inputs are sent whose result has not arrived: the
  thread that takes inputs from the caller's iterable waits for a free slot
  before each, so a huge or endless iterable is never pickled ahead into
  memory.
- Output events are printed as they arrive; results are decoded as they
  arrive, in the order they finish.
- Leaving early (an exception, Ctrl-C, a consumer dropping a `map`) cancels
  the call, and the controlplane cancels the unfinished tasks.
"""

from __future__ import annotations

import queue
import threading
from typing import Iterable, Iterator, Optional, Tuple

import cloudpickle
import grpc

from .client import Client
from .errors import ControlplaneError, TaskCancelled
from .outcome import outcome_value
from .output import OutputPrinter
from .v1 import function_pb2 as pb

# Enough to keep every container of a large map busy; small enough that the
# pickled inputs waiting for a result stay a bounded amount of memory.
MAX_IN_FLIGHT = 1000
# How often a request thread waiting for a free slot checks whether the call ended.
_SLOT_POLL_SECONDS = 0.2
# One Run message carries at most this many inputs, and at most this many
# payload bytes unless it carries one input alone.
_INPUTS_PER_MESSAGE = 256
_INPUT_BYTES_PER_MESSAGE = 1 << 20
# After the last input of a map.
_END = object()


class Cancellation:
    """Lets another thread cancel the gRPC calls of one SDK call (used by `.aio`)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._calls = []
        self.cancelled = False

    def attach(self, call) -> None:
        with self._lock:
            if not self.cancelled:
                self._calls.append(call)
                return
        call.cancel()

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            calls, self._calls = self._calls, []
        for call in calls:
            call.cancel()


def pickle_input(args: tuple, kwargs: dict) -> bytes:
    try:
        return cloudpickle.dumps((args, kwargs))
    except Exception as e:  # pickling raises anything the objects' __reduce__ does
        raise TypeError(
            f"the arguments cannot be pickled ({type(e).__name__}: {e}); pass plain data, "
            f"or objects of classes the function's container can import"
        ) from e


class _Requests:
    """The request side of a Run stream; iterated by gRPC's request thread.

    A thread of its own takes the inputs from the caller's iterable (which
    may block) and pickles them, each once a slot is free; the request
    thread sends whatever is ready in one message. A slow iterable's input
    goes alone and at once; a fast one's go many to a message, which costs
    the caller a fraction of what a message each would.
    """

    def __init__(self, stub_id: str, payloads: Iterator[bytes], max_in_flight: int):
        self._stub_id = stub_id
        self._payloads = payloads
        self._ready: queue.SimpleQueue = queue.SimpleQueue()  # RunInput, then _END
        self._carry = None
        self.slots = threading.Semaphore(max_in_flight)
        self.finished = threading.Event()
        self.error: Optional[BaseException] = None
        self.sent = 0
        self.call = None

    def _take(self) -> None:
        try:
            for index, payload in enumerate(self._payloads):
                while not self.slots.acquire(timeout=_SLOT_POLL_SECONDS):
                    if self.finished.is_set():
                        return
                if self.finished.is_set():
                    return
                self._ready.put(pb.RunInput(index=index, payload=payload))
        except Exception as e:
            # The caller's iterable or an unpicklable argument: gRPC would
            # swallow it, so keep it for the consumer and stop the call.
            self.error = e
            if self.call is not None:
                self.call.cancel()
        finally:
            self._ready.put(_END)

    def _next_batch(self) -> Tuple[list, bool]:
        """The inputs ready now (waiting for one), and whether they are the last."""
        item, self._carry = self._carry, None
        while item is None:
            try:
                item = self._ready.get(timeout=_SLOT_POLL_SECONDS)
            except queue.Empty:
                if self.finished.is_set():
                    return [], True
        batch, size = [], 0
        while True:
            if item is _END:
                return batch, True
            full = len(batch) == _INPUTS_PER_MESSAGE or size + len(item.payload) > _INPUT_BYTES_PER_MESSAGE
            if batch and full:
                self._carry = item  # the next message's first
                return batch, False
            batch.append(item)
            size += len(item.payload)
            try:
                item = self._ready.get_nowait()
            except queue.Empty:
                return batch, False

    def __iter__(self):
        yield pb.RunRequest(start=pb.RunStart(stub_id=self._stub_id, batch_results=True))
        threading.Thread(target=self._take, name="levers9-map-inputs", daemon=True).start()
        last = False
        while not last:
            batch, last = self._next_batch()
            if self.finished.is_set():
                return
            if len(batch) == 1:
                yield pb.RunRequest(input=batch[0])
            elif batch:
                yield pb.RunRequest(inputs=pb.RunInputs(inputs=batch))
            self.sent += len(batch)


def _follow(client: Client, method: str, call, requests: Optional[_Requests], cancellation: Optional[Cancellation]):
    """Yields (index, TaskOutcome) from a Run or Call's events, printing output."""
    if cancellation is not None:
        cancellation.attach(call)
    printer = OutputPrinter()
    completed = False
    try:
        for event in call:
            kind = event.WhichOneof("kind")
            if kind == "result" or kind == "results":
                outcomes = [event.result] if kind == "result" else event.results.outcomes
                for outcome in outcomes:
                    if requests is not None:
                        requests.slots.release()
                    printer.task_done(outcome.task_id)
                    yield outcome.index, outcome
            elif kind == "output":
                printer.output(event.output)
            elif kind == "retrying":
                printer.retrying(event.retrying)
            # "accepted" only names the task; nothing to do with it here.
        completed = True
    except grpc.RpcError as e:
        if requests is not None and requests.error is not None:
            raise requests.error from None
        if cancellation is not None and cancellation.cancelled:
            raise TaskCancelled("the call was cancelled by the caller") from None
        raise client.translate(e, method) from None
    finally:
        if requests is not None:
            requests.finished.set()
        if not completed:
            call.cancel()
        printer.close()


def stream_results(
    client: Client,
    stub_id: str,
    payloads: Iterator[bytes],
    cancellation: Optional[Cancellation] = None,
    max_in_flight: int = MAX_IN_FLIGHT,
) -> Iterator[Tuple[int, object]]:
    """Runs the inputs; yields (index, TaskOutcome) in the order tasks finish."""
    requests = _Requests(stub_id, payloads, max_in_flight)
    call = client.run(requests)
    requests.call = call
    received = 0
    events = _follow(client, "Run", call, requests, cancellation)
    try:
        for result in events:
            received += 1
            yield result
    finally:
        # Leaving early cancels the call now, not when garbage-collected.
        events.close()
    if requests.error is not None:
        raise requests.error
    if received < requests.sent:
        raise ControlplaneError(
            f"the controlplane ended the Run stream with {requests.sent - received} of {requests.sent} results missing"
        )


def run_one(client: Client, stub_id: str, payload: bytes, cancellation: Optional[Cancellation] = None):
    """One input, in one Call: the return value, or the exception raised."""
    call = client.call_one(pb.CallRequest(start=pb.RunStart(stub_id=stub_id), input=pb.RunInput(payload=payload)))
    outcome = None
    events = _follow(client, "Call", call, None, cancellation)
    try:
        for _, result in events:
            outcome = result
    finally:
        events.close()
    if outcome is None:
        raise ControlplaneError("the controlplane ended the Call without a result")
    ok, value = outcome_value(outcome)
    if ok:
        return value
    raise value


def run_many(
    client: Client,
    stub_id: str,
    payloads: Iterator[bytes],
    order_outputs: bool,
    return_exceptions: bool,
    cancellation: Optional[Cancellation] = None,
) -> Iterator[object]:
    """Values (or exceptions) of many inputs, in input order if `order_outputs`."""
    results = stream_results(client, stub_id, payloads, cancellation)
    waiting = {}  # index -> value, for results that arrived before an earlier one
    next_index = 0
    try:
        for index, outcome in results:
            ok, value = outcome_value(outcome)
            if not ok and not return_exceptions:
                raise value
            if not order_outputs:
                yield value
                continue
            waiting[index] = value
            while next_index in waiting:
                yield waiting.pop(next_index)
                next_index += 1
    finally:
        # Closing the stream now (not when garbage-collected) cancels what is left.
        results.close()


def spawn(client: Client, stub_id: str, payload: bytes) -> str:
    response = client.call("SpawnTask", pb.SpawnTaskRequest(stub_id=stub_id, payload=payload))
    return response.task_id


def wait_for_task(client: Client, task_id: str, timeout: Optional[float], cancellation: Optional[Cancellation] = None):
    """Follows a task (printing its output) to its value, or raises its exception.

    Raises TimeoutError when `timeout` seconds pass first; the task keeps running.
    """
    call = client.wait_task(task_id, timeout)
    if cancellation is not None:
        cancellation.attach(call)
    printer = OutputPrinter()
    outcome = None
    try:
        for event in call:
            kind = event.WhichOneof("kind")
            if kind == "result":
                outcome = event.result
                break
            if kind == "output":
                printer.output(event.output)
            elif kind == "retrying":
                printer.retrying(event.retrying)
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            raise TimeoutError(
                f"task {task_id} did not finish within {timeout:g} s; it is still running: "
                f"call get() again to keep waiting, or cancel() it"
            ) from None
        if cancellation is not None and cancellation.cancelled:
            raise TaskCancelled("waiting was cancelled by the caller; the task itself keeps running") from None
        raise client.translate(e, "WaitTask") from None
    finally:
        # After the result there is nothing more to read; do not wait for trailers.
        call.cancel()
        printer.close()
    if outcome is None:
        raise ControlplaneError(f"the controlplane ended WaitTask for task {task_id} without a result")
    ok, value = outcome_value(outcome)
    if ok:
        return value
    raise value


def cancel_task(client: Client, task_id: str) -> None:
    client.call("CancelTask", pb.CancelTaskRequest(task_id=task_id))


def pickled_inputs(iterables: Iterable[Iterable]) -> Iterator[bytes]:
    """Payloads for map: one (args, {}) pickle per zipped item, made lazily."""
    for args in zip(*iterables):
        yield pickle_input(args, {})
