"""The Run stream logic of map without a network: bounded in-flight inputs,
inputs ready together sent in one message, a slow iterable's input sent at
once, and cancellation when the consumer leaves early."""

import queue
import threading
import time

import cloudpickle
import pytest

pytest.importorskip("grpc")

from levers9 import invoke  # noqa: E402
from levers9.v1 import function_pb2 as pb  # noqa: E402
from waiting import wait_for  # noqa: E402


def _inputs(request):
    return [request.input] if request.WhichOneof("kind") == "input" else list(request.inputs.inputs)


class LoopbackCall:
    """Stands in for a Run call: answers each input with its own payload.

    With `hold`, results are held back until more than `hold` inputs are
    unanswered (or until `answer_everything`).
    """

    def __init__(self, requests, hold=0):
        self._events = queue.SimpleQueue()
        self.cancelled = threading.Event()
        self.max_unanswered = 0
        self.received = 0
        self.messages = 0
        self.largest_batch_bytes = 0
        self._hold = hold
        self._held = []
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, args=(iter(requests),), daemon=True).start()

    def _serve(self, requests):
        next(requests)  # RunStart
        for request in requests:
            if self.cancelled.is_set():
                return
            self.messages += 1
            items = _inputs(request)
            if len(items) > 1:
                self.largest_batch_bytes = max(self.largest_batch_bytes, sum(len(i.payload) for i in items))
            for item in items:
                event = pb.RunEvent(result=pb.TaskOutcome(index=item.index, state=pb.FINAL_TASK_STATE_COMPLETE, payload=item.payload))
                with self._lock:
                    self.received += 1
                    self._held.append(event)
                    self.max_unanswered = max(self.max_unanswered, len(self._held))
                    if len(self._held) > self._hold:
                        self._flush()
        with self._lock:
            self._flush()
        self._events.put(None)

    def _flush(self):
        for event in self._held:
            self._events.put(event)
        self._held = []

    def answer_everything(self):
        """Stops holding results back: everything held and to come is answered."""
        with self._lock:
            self._hold = 0
            self._flush()

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            try:
                event = self._events.get(timeout=0.05)
            except queue.Empty:
                if self.cancelled.is_set():
                    raise StopIteration from None
                continue
            if event is None:
                raise StopIteration
            return event

    def cancel(self):
        self.cancelled.set()


class LoopbackClient:
    def __init__(self, hold=0):
        self.hold = hold
        self.calls = []

    def run(self, requests):
        call = LoopbackCall(requests, self.hold)
        self.calls.append(call)
        return call


def _map(client, n):
    return invoke.run_many(client, "stub-1", invoke.pickled_inputs([range(n)]), order_outputs=True, return_exceptions=False)


def test_no_more_than_1000_inputs_wait_for_a_result():
    client = LoopbackClient(hold=10**9)
    results = _map(client, 2500)
    collected = []
    consumer = threading.Thread(target=lambda: collected.extend(results))
    consumer.start()
    call = wait_for(lambda: client.calls and client.calls[0].received >= invoke.MAX_IN_FLIGHT and client.calls[0])
    # No result has come back, so the 1001st input waits for a free slot;
    # given a moment to be sent if it could, it is not.
    time.sleep(0.2)
    assert call.received == invoke.MAX_IN_FLIGHT
    call.answer_everything()
    consumer.join(timeout=10)
    assert collected == [((i,), {}) for i in range(2500)]


def test_leaving_a_map_early_cancels_the_call():
    client = LoopbackClient()
    results = _map(client, 5000)
    assert next(results) == ((0,), {})
    results.close()
    assert client.calls[0].cancelled.is_set()


def test_inputs_ready_together_go_in_one_message():
    client = LoopbackClient()
    assert list(_map(client, 2000)) == [((i,), {}) for i in range(2000)]
    call = client.calls[0]
    assert call.received == 2000
    assert call.messages < 200, f"{call.messages} messages for 2000 inputs"


def test_a_slow_iterable_does_not_hold_back_the_inputs_before_it():
    client = LoopbackClient()
    second = threading.Event()

    def inputs():
        yield cloudpickle.dumps(((0,), {}))
        second.wait(timeout=10)
        yield cloudpickle.dumps(((1,), {}))

    results = invoke.run_many(client, "stub-1", inputs(), order_outputs=True, return_exceptions=False)
    assert next(results) == ((0,), {}), "the first input waited for the second"
    second.set()
    assert list(results) == [((1,), {})]


def test_an_iterable_that_raises_fails_the_map_with_its_error():
    client = LoopbackClient()

    def inputs():
        yield cloudpickle.dumps(((0,), {}))
        raise ValueError("the caller's iterable broke")

    with pytest.raises(ValueError, match="the caller's iterable broke"):
        list(invoke.run_many(client, "stub-1", inputs(), order_outputs=True, return_exceptions=False))


def test_inputs_share_a_message_only_up_to_a_mebibyte():
    client = LoopbackClient()
    sizes = [300_000, 300_000, 300_000, 300_000, 2_000_000, 10, 10]
    inputs = (cloudpickle.dumps(((b"x" * n,), {})) for n in sizes)
    results = list(invoke.run_many(client, "stub-1", inputs, order_outputs=True, return_exceptions=False))
    assert [len(args[0]) for args, _ in results] == sizes
    assert client.calls[0].largest_batch_bytes <= 1 << 20
