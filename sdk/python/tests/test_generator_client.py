"""The caller's side of a generator call, against a scripted FunctionService
over real gRPC: what it acknowledges, and the streams it must refuse."""

import threading
import time
from concurrent import futures

import cloudpickle
import grpc
import pytest

from fake_controlplane import TOKEN
from levers9.errors import ControlplaneError, TaskFailed
from levers9.generator import ACK_EVERY_ITEMS, run_generator
from levers9.v1 import function_pb2 as pb
from levers9.v1 import function_pb2_grpc
from waiting import wait_for


def item(index, value, task_id="t-1"):
    return pb.RunEvent(item=pb.TaskItemEvent(task_id=task_id, item_index=index, payload=cloudpickle.dumps(value)))


def result(count, task_id="t-1"):
    return pb.RunEvent(result=pb.TaskOutcome(task_id=task_id, state=pb.FINAL_TASK_STATE_COMPLETE, payload=cloudpickle.dumps(count)))


class ScriptedGenerators(function_pb2_grpc.FunctionServiceServicer):
    """Answers a generator Run with `script`, sending an item only while
    fewer than `window` are unacknowledged, as the runner does; keeps what
    the caller sent."""

    def __init__(self):
        self.script = []
        self.window = 1 << 30
        self.starts = []
        self.received = []
        self.closed = threading.Event()
        self._acked = threading.Condition()

    def acked(self):
        with self._acked:
            return self.received[-1] if self.received else 0

    def Run(self, request_iterator, context):
        start = next(request_iterator).start
        self.starts.append(start)
        next(request_iterator)  # the input

        def read_acks():
            try:
                for request in request_iterator:
                    with self._acked:
                        self.received.append(request.received.received)
                        self._acked.notify_all()
            except grpc.RpcError:
                pass  # the caller cancelled
            self.closed.set()

        threading.Thread(target=read_acks, daemon=True).start()
        for event in self.script:
            if event.WhichOneof("kind") == "item":
                with self._acked:
                    opened = self._acked.wait_for(lambda: event.item.item_index - self.acked() < self.window, timeout=5)
                if not opened:
                    context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "no acknowledgement opened the window")
            yield event


@pytest.fixture
def scripted(clean_env):
    service = ScriptedGenerators()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    function_pb2_grpc.add_FunctionServiceServicer_to_server(service, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    clean_env.setenv("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1")
    clean_env.setenv("LEVERS9_CONTROLPLANE_PORT", str(port))
    clean_env.setenv("LEVERS9_TOKEN", TOKEN)
    yield service
    server.stop(grace=None)


def items_of(service):
    from levers9.client import get_client

    return run_generator(get_client(), "st-1", cloudpickle.dumps(((), {})))


def test_the_caller_acknowledges_running_counts_every_few_items_so_a_window_keeps_moving(scripted):
    scripted.window = 16
    scripted.script = [item(i, i) for i in range(40)] + [result(40)]
    assert list(items_of(scripted)) == list(range(40))
    assert scripted.starts[0].generator
    # Item 39 left only once 24 were acknowledged.
    assert scripted.received[:3] == [ACK_EVERY_ITEMS, 2 * ACK_EVERY_ITEMS, 3 * ACK_EVERY_ITEMS]
    assert scripted.closed.wait(5), "the request side is closed once the result came"


def test_an_item_counts_as_taken_once_the_next_is_asked_for(scripted):
    # The window keeps the call open for the acknowledgement to arrive.
    scripted.window = 16
    scripted.script = [item(i, i) for i in range(20)] + [result(20)]
    stream = items_of(scripted)
    taken = [next(stream) for _ in range(ACK_EVERY_ITEMS)]
    assert taken == list(range(ACK_EVERY_ITEMS))
    time.sleep(0.2)
    assert scripted.received == [], "the eighth is out but not yet taken"
    assert next(stream) == ACK_EVERY_ITEMS
    wait_for(lambda: scripted.received, within=5)
    assert scripted.received == [ACK_EVERY_ITEMS]
    stream.close()


def test_a_retry_after_items_ends_the_call_and_one_before_them_does_not(scripted):
    retrying = pb.RunEvent(retrying=pb.TaskRetrying(task_id="t-1", attempt=2, reason="ValueError: once"))
    scripted.script = [retrying, item(0, "a"), result(1)]
    assert list(items_of(scripted)) == ["a"]
    scripted.script = [item(0, "a"), retrying, item(0, "a"), result(1)]
    taken = []
    with pytest.raises(TaskFailed, match=r"the generator failed after 1 items and would start over \(ValueError: once\)"):
        for value in items_of(scripted):
            taken.append(value)
    assert taken == ["a"]


def test_a_stream_that_starts_over_or_loses_items_is_refused(scripted):
    scripted.script = [item(0, "a"), item(1, "b"), item(0, "a"), result(2)]
    with pytest.raises(TaskFailed, match=r"started over after 2 items"):
        list(items_of(scripted))
    scripted.script = [item(0, "a"), result(2)]
    with pytest.raises(ControlplaneError, match=r"the generator yielded 2 items, but 1 arrived"):
        list(items_of(scripted))


def test_an_error_comes_after_the_items_before_it(scripted):
    error = pb.TaskOutcome(task_id="t-1", state=pb.FINAL_TASK_STATE_ERROR, payload=cloudpickle.dumps(KeyError("gone")), message="KeyError")
    scripted.script = [item(0, 1), item(1, 2), pb.RunEvent(result=error)]
    taken = []
    with pytest.raises(KeyError, match="gone"):
        for value in items_of(scripted):
            taken.append(value)
    assert taken == [1, 2]
