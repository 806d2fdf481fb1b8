"""An in-process FunctionService for client tests: real gRPC, functions run in threads.

It keeps what a test wants to look at (objects stored, stub requests, the
most inputs ever in flight on a Run stream) and runs a stub's function by
importing the module the stub names (already imported by the test) and
calling the plain function, reporting errors the way the runner does.

Hooks for behaviour a plain function cannot produce:
- raise `FakeState("timeout", "...")` in a function: the task ends in that state;
- `outputs[function_name] = [(stream, bytes), ...]`: output events before each result;
- `retry_first.add(function_name)`: a TaskRetrying event before each result.
"""

from __future__ import annotations

import importlib
import queue
import threading
import uuid
from concurrent import futures

import cloudpickle
import grpc

from levers9.runner.execute import complete_result, error_result
from levers9.v1 import function_pb2 as pb
from levers9.v1 import function_pb2_grpc

TOKEN = "good-token"


def _final_state(text):
    """The runner's frames say how a task ended in words, the wire as an enum.
    A word that names no value (a test's "lost") becomes a number no value
    names, as a newer controlplane might send."""
    try:
        return pb.FinalTaskState.Value("FINAL_TASK_STATE_" + text.upper())
    except ValueError:
        return 99


class FakeState(Exception):
    """Raised by a test function to end its task in a state other than error."""

    def __init__(self, state, message):
        super().__init__(message)
        self.state = state
        self.message = message


class FakeFunctionService(function_pb2_grpc.FunctionServiceServicer):
    def __init__(self):
        # A token of its own: the SDK keeps stub ids per address and token,
        # and two fakes in one run can be given the same port.
        self.token = f"{TOKEN}-{uuid.uuid4().hex[:8]}"
        self.objects = {}
        self.head_calls = 0
        self.put_calls = 0
        self.stub_requests = []
        self.stubs = {}
        self.outputs = {}
        self.retry_first = set()
        self.max_in_flight = 0
        self.tasks = {}  # task_id -> {"done": Event, "outcome": TaskOutcome or None}
        self._pool = futures.ThreadPoolExecutor(max_workers=8)

    # -- helpers -----------------------------------------------------------------

    def _authorize(self, context):
        metadata = dict(context.invocation_metadata())
        if metadata.get("authorization") != f"Bearer {self.token}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "the token is not valid")

    def _function(self, stub):
        module_name, _, qualname = stub.name.rpartition(".")
        target = getattr(importlib.import_module(module_name), qualname)
        return stub.function_name, getattr(target, "raw_f", target)

    def _execute(self, stub_id, index, task_id, payload):
        """Runs one input; returns the RunEvents for it, the result last."""
        name, fn = self._function(self.stubs[stub_id])
        events = [
            pb.RunEvent(output=pb.TaskOutputEvent(index=index, task_id=task_id, stream=stream, data=data))
            for stream, data in self.outputs.get(name, [])
        ]
        if name in self.retry_first:
            events.append(pb.RunEvent(retrying=pb.TaskRetrying(index=index, task_id=task_id, attempt=2, reason="boom")))
        try:
            args, kwargs = cloudpickle.loads(payload)
            header, body = complete_result(task_id, name, fn(*args, **kwargs))
        except FakeState as e:
            header, body = {"state": e.state, "message": e.message}, b""
        except Exception as e:
            header, body = error_result(task_id, e)
        outcome = pb.TaskOutcome(
            index=index,
            task_id=task_id,
            state=_final_state(header["state"]),
            payload=body,
            traceback=header.get("traceback", ""),
            message=header.get("message", ""),
        )
        events.append(pb.RunEvent(result=outcome))
        return events

    def _read_inputs(self, request_iterator, start, events, state, lock, finish):
        for request in request_iterator:
            items = [request.input] if request.WhichOneof("kind") == "input" else request.inputs.inputs
            for item in items:
                task_id = f"task-{uuid.uuid4().hex[:8]}"
                with lock:
                    state["sent"] += 1
                    self.max_in_flight = max(self.max_in_flight, state["sent"] - state["done"])
                events.put(pb.RunEvent(accepted=pb.TaskAccepted(index=item.index, task_id=task_id)))
                future = self._pool.submit(self._execute, start.stub_id, item.index, task_id, item.payload)
                future.add_done_callback(finish)

    # -- FunctionService ---------------------------------------------------------

    def HeadObject(self, request, context):
        self._authorize(context)
        self.head_calls += 1
        return pb.HeadObjectResponse(exists=request.digest in self.objects)

    def PutObject(self, request, context):
        self._authorize(context)
        self.put_calls += 1
        self.objects[request.digest] = request.data
        return pb.PutObjectResponse()

    def GetOrCreateStub(self, request, context):
        self._authorize(context)
        self.stub_requests.append(request)
        stub_id = f"stub-{len(self.stub_requests)}"
        self.stubs[stub_id] = request
        return pb.GetOrCreateStubResponse(stub_id=stub_id)

    def Run(self, request_iterator, context):
        self._authorize(context)
        start = next(request_iterator).start
        events = queue.Queue()
        state = {"sent": 0, "done": 0, "closed": False}
        lock = threading.Lock()

        def finish(future):
            for event in future.result():
                events.put(event)
            with lock:
                state["done"] += 1

        def read_inputs():
            try:
                self._read_inputs(request_iterator, start, events, state, lock, finish)
            except grpc.RpcError:
                pass  # the caller cancelled the call
            with lock:
                state["closed"] = True
            events.put(None)

        threading.Thread(target=read_inputs, daemon=True).start()

        results = 0
        while True:
            try:
                event = events.get(timeout=0.05)
            except queue.Empty:
                event = False
            if event:
                if event.WhichOneof("kind") == "result":
                    results += 1
                yield event
            with lock:
                if state["closed"] and results == state["sent"] and events.empty():
                    return
            if not context.is_active():
                return

    def Call(self, request, context):
        # A Call is a Run of one input that came whole in its request.
        requests = iter([pb.RunRequest(start=request.start), pb.RunRequest(input=request.input)])
        yield from self.Run(requests, context)

    def SpawnTask(self, request, context):
        self._authorize(context)
        task_id = f"task-{uuid.uuid4().hex[:8]}"
        task = self.tasks[task_id] = {"done": threading.Event(), "outcome": None}

        def run():
            outcome = self._execute(request.stub_id, 0, task_id, request.payload)[-1].result
            if task["outcome"] is None:
                task["outcome"] = outcome
            task["done"].set()

        threading.Thread(target=run, daemon=True).start()
        return pb.SpawnTaskResponse(task_id=task_id)

    def WaitTask(self, request, context):
        self._authorize(context)
        task = self.tasks.get(request.task_id)
        if task is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no task {request.task_id}")
        while not task["done"].wait(0.05):
            if not context.is_active():
                return
        yield pb.RunEvent(result=task["outcome"])

    def CancelTask(self, request, context):
        self._authorize(context)
        task = self.tasks[request.task_id]
        if task["outcome"] is None:
            task["outcome"] = pb.TaskOutcome(
                task_id=request.task_id, state=pb.FINAL_TASK_STATE_CANCELLED, message="cancelled by the caller"
            )
            task["done"].set()
        return pb.CancelTaskResponse(task=pb.Task(task_id=request.task_id, state=pb.TASK_STATE_CANCELLED))


def start_server():
    """(server, servicer, port) on localhost; stop the server when done."""
    service = FakeFunctionService()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=16),
        options=[("grpc.max_send_message_length", 256 << 20), ("grpc.max_receive_message_length", 256 << 20)],
    )
    function_pb2_grpc.add_FunctionServiceServicer_to_server(service, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, service, port

