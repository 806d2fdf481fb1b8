"""`python -m levers9.runner` end to end against a fake worker in the test.

The runner runs as the container would run it: `python -S` (no site-packages,
so no grpc, protobuf or installed cloudpickle) with PYTHONPATH set to the
unpacked SDK object and the code directory.
"""

import io
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import zipfile

import cloudpickle
import pytest

from levers9.archive import sdk_archive
from levers9.wire import read_frame, write_frame

APP = '''
import asyncio, logging, os, sys, threading, time
from levers9 import function

logging.basicConfig(level=logging.INFO, format="%(message)s")

@function
def log_it(x):
    logging.info("logged %s", x)
    return x

@function
def add(a, b=0):
    return a + b

@function
def boom(x):
    raise ValueError(f"boom {x}")

@function(concurrency=2)
def talk(name, n):
    for i in range(n):
        print(f"{name} {i}")
        time.sleep(0.02)
    print(f"{name} done", file=sys.stderr)
    sys.stdout.buffer.write(f"{name} raw\\n".encode())
    return name

@function
async def async_add(a, b):
    await asyncio.sleep(0.01)
    return a + b

@function
def attempt():
    return os.environ["LEVERS9_TASK_ATTEMPT"], os.environ["LEVERS9_TASK_ID"]

@function
def unpicklable():
    return threading.Lock()

@function
def nap(seconds):
    time.sleep(seconds)
    return seconds

def plain(x):
    return x * 10

if __name__ == "__main__":
    raise SystemExit("the __main__ block must not run in the container")
'''


class FakeWorker:
    """Serves one runner on a Unix socket, as the worker's container server does."""

    def __init__(self, function=None, concurrency=1, app=APP, module_path="app.py", extra_env=None, spare=False):
        """A runner for `function`; with `spare`, a spare's (`LEVERS9_SPARE`):
        no function yet, an empty code directory and another working directory."""
        # Unix socket paths are limited to ~108 bytes: keep the directory short.
        self.dir = tempfile.mkdtemp(prefix="l9r-")
        code = self.code = os.path.join(self.dir, "code")
        sdk = os.path.join(self.dir, "sdk")
        os.makedirs(code)
        if not spare:
            self.write_code({module_path: app})
        zipfile.ZipFile(io.BytesIO(sdk_archive().data)).extractall(sdk)
        socket_path = os.path.join(self.dir, "server.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(socket_path)
        self.listener.listen(1)
        self.listener.settimeout(20)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": f"{sdk}:{code}",
            "PYTHONUNBUFFERED": "1",
            "LEVERS9_CONTAINER_SERVER": socket_path,
        }
        if spare:
            env.update({"LEVERS9_SPARE": "1", "LEVERS9_CONTAINER_ID": "spare-1"})
        else:
            env.update(
                {
                    "LEVERS9_CONTAINER_ID": "c-test",
                    "LEVERS9_MODULE_PATH": module_path,
                    "LEVERS9_FUNCTION": function,
                    "LEVERS9_CONCURRENCY": str(concurrency),
                    "LEVERS9_CODE_DIR": code,
                }
            )
        env.update(extra_env or {})
        self.process = subprocess.Popen(
            [sys.executable, "-S", "-m", "levers9.runner"],
            cwd=self.dir if spare else code,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.conn, _ = self.listener.accept()
        self.conn.settimeout(20)
        self.reader = self.conn.makefile("rb")

    def write_code(self, files):
        """Writes {name: source} into the code directory."""
        for name, source in files.items():
            with open(os.path.join(self.code, name), "w") as f:
                f.write(textwrap.dedent(source))

    def read(self):
        return read_frame(self.reader)

    def send_input(self, task_id, *args, attempt=1, **kwargs):
        write_frame(self.conn, {"type": "input", "task_id": task_id, "attempt": attempt}, cloudpickle.dumps((args, kwargs)))

    def results(self, count):
        """Frames until `count` results: (results by task, outputs as (task, stream, bytes) in order)."""
        results, outputs = {}, []
        while len(results) < count:
            header, body = self.read()
            if header["type"] == "result":
                results[header["task_id"]] = (header, body)
            elif header["type"] == "output":
                assert header["task_id"] not in results, "output must come before its task's result"
                outputs.append((header["task_id"], header["stream"], body))
        return results, outputs

    def close(self):
        # The reader holds the socket open too: both must go for the runner to see EOF.
        self.reader.close()
        self.conn.close()
        self.listener.close()
        try:
            return self.process.wait(timeout=10)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def make_worker():
    workers = []

    def make(*args, **kwargs):
        worker = FakeWorker(*args, **kwargs)
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        if worker.process.poll() is None:
            worker.process.kill()
        worker.process.wait()
        shutil.rmtree(worker.dir, ignore_errors=True)


def test_hello_then_a_result_per_input_and_exit_0_when_the_worker_goes(make_worker):
    worker = make_worker("add")
    assert worker.read() == ({"type": "hello", "container_id": "c-test", "cancels": True}, b"")
    worker.send_input("t1", 2, b=3)
    worker.send_input("t2", 10)
    results, _ = worker.results(2)
    assert results["t1"][0] == {"type": "result", "task_id": "t1", "state": "complete"}
    assert cloudpickle.loads(results["t1"][1]) == 5
    assert cloudpickle.loads(results["t2"][1]) == 10
    assert worker.close() == 0


def test_hello_carries_the_container_server_credential_and_the_function_cannot_see_it(make_worker):
    app = APP + "\n@function\ndef credential():\n    return os.environ.get('LEVERS9_CONTAINER_SERVER_CREDENTIAL')\n"
    worker = make_worker("credential", app=app, extra_env={"LEVERS9_CONTAINER_SERVER_CREDENTIAL": "s3cret"})
    assert worker.read() == ({"type": "hello", "container_id": "c-test", "cancels": True, "credential": "s3cret"}, b"")
    worker.send_input("t1")
    results, _ = worker.results(1)
    assert cloudpickle.loads(results["t1"][1]) is None
    assert worker.close() == 0


def test_an_exception_comes_back_pickled_with_message_and_user_traceback(make_worker):
    worker = make_worker("boom")
    worker.read()
    worker.send_input("t1", 7)
    header, body = worker.results(1)[0]["t1"]
    assert header["state"] == "error"
    assert header["message"] == "ValueError: boom 7"
    assert 'raise ValueError(f"boom {x}")' in header["traceback"]
    assert "app.py" in header["traceback"]
    assert "levers9/runner" not in header["traceback"]
    error = cloudpickle.loads(body)
    assert isinstance(error, ValueError) and str(error) == "boom 7"


def test_output_is_routed_to_the_task_that_wrote_it_with_concurrency_2(make_worker):
    worker = make_worker("talk", concurrency=2)
    worker.read()
    worker.send_input("ta", "alpha", 10)
    worker.send_input("tb", "beta", 10)
    results, outputs = worker.results(2)
    assert {t: cloudpickle.loads(b) for t, (_, b) in results.items()} == {"ta": "alpha", "tb": "beta"}
    by_task = {}
    for task_id, stream, data in outputs:
        by_task.setdefault((task_id, stream), b"")
        by_task[(task_id, stream)] += data
    expected_a = "".join(f"alpha {i}\n" for i in range(10)) + "alpha raw\n"
    expected_b = "".join(f"beta {i}\n" for i in range(10)) + "beta raw\n"
    assert by_task[("ta", "stdout")].decode() == expected_a
    assert by_task[("tb", "stdout")].decode() == expected_b
    assert by_task[("ta", "stderr")] == b"alpha done\n"
    assert by_task[("tb", "stderr")] == b"beta done\n"
    # Batched: far fewer frames than writes (each print is two writes).
    assert len(outputs) < 30
    worker.close()
    # The container log (real stdout) still has everything.
    log = worker.process.stdout.read().decode()
    assert "alpha 9" in log and "beta 9" in log


def test_logging_set_up_at_import_is_captured_per_task(make_worker):
    worker = make_worker("log_it")
    worker.read()
    worker.send_input("t1", 5)
    results, outputs = worker.results(1)
    assert cloudpickle.loads(results["t1"][1]) == 5
    assert ("t1", "stderr", b"logged 5\n") in outputs


def test_async_functions_run_to_completion(make_worker):
    worker = make_worker("async_add")
    worker.read()
    worker.send_input("t1", 1, 2)
    assert cloudpickle.loads(worker.results(1)[0]["t1"][1]) == 3


def test_the_attempt_and_task_id_are_in_the_environment(make_worker):
    worker = make_worker("attempt")
    worker.read()
    worker.send_input("t9", attempt=3)
    assert cloudpickle.loads(worker.results(1)[0]["t9"][1]) == ("3", "t9")


def test_an_unpicklable_return_value_is_an_error_saying_so(make_worker):
    worker = make_worker("unpicklable")
    worker.read()
    worker.send_input("t1")
    header, body = worker.results(1)[0]["t1"]
    assert header["state"] == "error"
    assert "cannot be pickled" in header["message"]
    assert isinstance(cloudpickle.loads(body), TypeError)


PICKLING_APP = APP + """
@function
def cloudpickle_loaded(f=None):
    return "cloudpickle" in sys.modules, f(2) if f else None

@function
def adder(n):
    return lambda x: x + n
"""


def test_cloudpickle_is_loaded_only_for_what_pickle_cannot_do(make_worker):
    worker = make_worker("cloudpickle_loaded", app=PICKLING_APP)
    worker.read()
    # Plain data in and out: the runner started and served without it.
    worker.send_input("t1")
    assert cloudpickle.loads(worker.results(1)[0]["t1"][1]) == (False, None)
    # A lambda argument (cloudpickled by value by the caller) loads it.
    worker.send_input("t2", lambda x: x * 21)
    assert cloudpickle.loads(worker.results(1)[0]["t2"][1]) == (True, 42)


def test_a_lambda_returned_comes_back_by_value(make_worker):
    worker = make_worker("adder", app=PICKLING_APP)
    worker.read()
    worker.send_input("t1", 5)
    header, body = worker.results(1)[0]["t1"]
    assert header["state"] == "complete"
    assert cloudpickle.loads(body)(1) == 6


def test_a_plain_undecorated_function_can_be_run_too(make_worker):
    worker = make_worker("plain")
    worker.read()
    worker.send_input("t1", 4)
    assert cloudpickle.loads(worker.results(1)[0]["t1"][1]) == 40


def test_a_missing_function_is_an_init_error_and_exit_1(make_worker):
    worker = make_worker("nope")
    header, body = worker.read()
    assert header["type"] == "init_error"
    assert "nope" in header["message"] and "app.py" in header["message"]
    assert "Traceback" in header["traceback"]
    assert worker.read() is None
    assert worker.process.wait(timeout=10) == 1


def test_an_import_failure_is_an_init_error(make_worker):
    worker = make_worker("f", app="import not_installed_anywhere\n")
    header, _ = worker.read()
    assert header["type"] == "init_error"
    assert "ModuleNotFoundError" in header["message"]
    assert worker.process.wait(timeout=10) == 1


def test_a_cancel_drops_a_waiting_input_and_is_refused_for_a_running_one(make_worker):
    worker = make_worker("nap")
    worker.read()
    worker.send_input("t1", 1.0)
    worker.send_input("t2", 0)
    write_frame(worker.conn, {"type": "cancel", "task_id": "t2"}, b"")
    header, body = worker.read()
    assert (header["type"], header["task_id"], header["state"], body) == ("result", "t2", "cancelled", b"")
    write_frame(worker.conn, {"type": "cancel", "task_id": "t1"}, b"")
    assert worker.read() == ({"type": "cancel_refused", "task_id": "t1"}, b"")
    header, body = worker.read()
    assert (header["task_id"], header["state"], cloudpickle.loads(body)) == ("t1", "complete", 1.0)
    # An unknown task: nothing to say; the next frame is the next input's.
    write_frame(worker.conn, {"type": "cancel", "task_id": "nobody"}, b"")
    worker.send_input("t3", 0)
    header, _ = worker.read()
    assert (header["type"], header["task_id"], header["state"]) == ("result", "t3", "complete")


def test_sigterm_exits_0_even_with_an_input_running(make_worker):
    worker = make_worker("talk")
    worker.read()
    worker.send_input("t1", "slow", 1000)
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(timeout=10) == 0


SPARE_APP = """
import os
import helper
from levers9 import function

@function
def where(x):
    return x, helper.NAME, os.environ.get("GREETING"), os.getcwd()
"""


def test_a_spare_waits_for_its_function_then_serves_it_as_the_container_it_was_assigned(make_worker):
    worker = make_worker(spare=True, extra_env={"LEVERS9_CONTAINER_SERVER_CREDENTIAL": "s3cret"})
    header, body = worker.read()
    assert (header["type"], header["container_id"], header["credential"], body) == ("spare", "spare-1", "s3cret", b"")
    assert "levers9" in header["modules"]
    assert header["modules"] == sorted(set(header["modules"]))
    # The code comes only now, after the runner started (and looked on its
    # path) with the directory empty: the module and one it imports from there.
    worker.write_code({"app.py": SPARE_APP, "helper.py": "NAME = 'helper'\n"})
    env = {
        "LEVERS9_MODULE_PATH": "app.py",
        "LEVERS9_FUNCTION": "where",
        "LEVERS9_CODE_DIR": worker.code,
        "GREETING": "hi",
    }
    write_frame(worker.conn, {"type": "assign", "container_id": "c-real", "env": env, "working_dir": worker.code})
    assert worker.read() == ({"type": "hello", "container_id": "c-real", "cancels": True, "credential": "s3cret"}, b"")
    worker.send_input("t1", 7)
    header, body = worker.results(1)[0]["t1"]
    assert header["state"] == "complete"
    assert cloudpickle.loads(body) == (7, "helper", "hi", os.path.realpath(worker.code))
    assert worker.close() == 0


def test_a_spare_whose_worker_closes_the_socket_before_assigning_it_exits_0(make_worker):
    worker = make_worker(spare=True)
    assert worker.read()[0]["type"] == "spare"
    assert worker.close() == 0


CLASS_APP = '''
import os
from levers9 import cls, enter, exit, method

@cls
class Counter:
    def __init__(self, start, marker):
        self.start = start
        self.marker = marker

    @enter
    def load(self):
        self.entered = getattr(self, "entered", 0) + 1
        self.count = self.start

    @method
    def bump(self, by=1):
        self.count += by
        return self.count, self.entered, os.getpid()

    @method
    async def peek(self):
        return self.count

    @method
    def nap(self, seconds):
        import time

        print("napping", flush=True)
        time.sleep(seconds)
        return seconds

    @method
    def countdown(self, n):
        for i in range(n, 0, -1):
            yield i * self.count

    def helper(self):
        return "not a method"

    @exit
    def close(self):
        with open(self.marker, "w") as f:
            f.write(f"exited at {self.count}")

@cls
class Broken:
    @enter
    def load(self):
        raise OSError("no weights here")

    @method
    def predict(self, x):
        return x

@cls
class Configured:
    @enter
    def load(self):
        from levers9 import Dict

        self.settings = Dict.from_name("settings")["size"]

    @method
    def size(self):
        return self.settings
'''


def _class_worker(make_worker, name, parameters, **env):
    import base64

    encoded = base64.b64encode(cloudpickle.dumps(parameters)).decode()
    return make_worker(name, app=CLASS_APP, extra_env={"LEVERS9_CLASS_PARAMETERS": encoded, **env})


def _entered(worker):
    """Reads the class runner's attach, then its hello once @enter returned."""
    assert worker.read() == ({"type": "attach", "container_id": "c-test"}, b"")
    assert worker.read()[0]["type"] == "hello"


def test_a_class_is_entered_once_and_each_input_calls_the_method_it_names(make_worker, tmp_path):
    marker = str(tmp_path / "exited")
    worker = _class_worker(make_worker, "Counter", ((10, marker), {}))
    _entered(worker)
    worker.send_input("t1", "bump")
    worker.send_input("t2", "bump", by=5)
    worker.send_input("t3", "peek")
    results, _ = worker.results(3)
    first, second = cloudpickle.loads(results["t1"][1]), cloudpickle.loads(results["t2"][1])
    assert first[:2] == (11, 1) and second[:2] == (16, 1)
    assert first[2] == second[2] == worker.process.pid
    assert cloudpickle.loads(results["t3"][1]) == 16
    # The worker going away stops the container: @exit runs first.
    assert worker.close() == 0
    assert open(marker).read() == "exited at 16"


def test_an_input_naming_no_method_of_the_class_fails_saying_which_there_are(make_worker, tmp_path):
    worker = _class_worker(make_worker, "Counter", ((0, str(tmp_path / "m")), {}))
    _entered(worker)
    worker.send_input("t1", "helper")
    header, _ = worker.results(1)[0]["t1"]
    assert header["state"] == "error"
    assert "Counter has no @method 'helper' (its @methods: bump, peek, nap, countdown)" in header["message"]


def test_a_class_with_a_generator_method_streams_it_and_still_returns_from_the_others(make_worker, tmp_path):
    from levers9.classes import Items
    from test_runner_generators import items_then_result

    worker = _class_worker(make_worker, "Counter", ((2, str(tmp_path / "m")), {}))
    _entered(worker)
    worker.send_input("t1", Items("countdown"), 3)
    items, header, body = items_then_result(worker)
    assert (items, header["state"], cloudpickle.loads(body)) == ([6, 4, 2], "complete", 3)
    worker.send_input("t2", "bump")
    header, body = worker.results(1)[0]["t2"]
    assert header["state"] == "complete" and cloudpickle.loads(body)[0] == 3
    # A call of the wrong kind (a looked-up class skips the SDK's check).
    worker.send_input("t3", "countdown", 3)
    worker.send_input("t4", Items("bump"))
    results, _ = worker.results(2)
    assert "Counter.countdown is a generator method: iterate over .remote_gen" in results["t3"][0]["message"]
    assert "Counter.bump is not a generator: call it with .remote" in results["t4"][0]["message"]
    # A running plain method cannot be stopped at an item: its cancel is
    # refused, as a function's is; a waiting one is dropped.
    worker.send_input("t5", "nap", 1.0)
    # Running once it printed: a cancel can no longer drop it.
    header, body = worker.read()
    assert (header["type"], header["task_id"], body[:7]) == ("output", "t5", b"napping")
    worker.send_input("t6", "nap", 0)
    write_frame(worker.conn, {"type": "cancel", "task_id": "t6"}, b"")
    header, _ = worker.read()
    assert (header["task_id"], header["state"]) == ("t6", "cancelled")
    write_frame(worker.conn, {"type": "cancel", "task_id": "t5"}, b"")
    assert worker.read() == ({"type": "cancel_refused", "task_id": "t5"}, b"")
    header, body = worker.read()
    assert (header["task_id"], header["state"], cloudpickle.loads(body)) == ("t5", "complete", 1.0)


def test_sigterm_runs_the_exit_methods_before_the_runner_leaves(make_worker, tmp_path):
    marker = str(tmp_path / "exited")
    worker = _class_worker(make_worker, "Counter", ((1, marker), {}))
    _entered(worker)
    worker.send_input("t1", "bump", by=2)
    worker.results(1)
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(timeout=10) == 0
    assert open(marker).read() == "exited at 3"


def test_a_failed_enter_is_an_init_error_naming_the_method(make_worker):
    worker = _class_worker(make_worker, "Broken", ((), {}))
    assert worker.read()[0]["type"] == "attach"
    header, _ = worker.read()
    assert header["type"] == "init_error"
    assert header["message"] == (
        "@enter method Broken.load failed, so this container serves no input: OSError: no weights here"
    )
    assert "no weights here" in header["traceback"]
    assert worker.process.wait(timeout=10) == 1


def test_a_class_container_without_parameters_says_its_stub_is_too_old(make_worker):
    worker = make_worker("Broken", app=CLASS_APP)
    header, _ = worker.read()
    assert header["type"] == "init_error"
    assert "has no LEVERS9_CLASS_PARAMETERS" in header["message"]


def _answer_object_call(worker, method, reply, parts=()):
    """Reads the runner's next frame, an object_call of `method`, and answers it as the worker would."""
    header, _ = worker.read()
    assert (header["type"], header["method"]) == ("object_call", method), header
    body = b"".join(struct.pack(">I", len(p)) + p for p in parts)
    write_frame(worker.conn, {"type": "object_reply", "call_id": header["call_id"], **reply}, body)
    return header


def test_enter_reads_a_dict_after_attach_and_says_hello_only_once_it_returned(make_worker):
    worker = _class_worker(make_worker, "Configured", ((), {}), LEVERS9_CONTAINER_SERVER_CREDENTIAL="s3cret")
    # The credential first, so the worker serves the calls of @enter.
    assert worker.read() == ({"type": "attach", "container_id": "c-test", "credential": "s3cret"}, b"")
    assert _answer_object_call(worker, "GetDict", {"code": "OK", "created": False})["name"] == "settings"
    _answer_object_call(worker, "DictGet", {"code": "OK", "found": True}, [cloudpickle.dumps("large")])
    header, _ = worker.read()
    assert (header["type"], header["credential"]) == ("hello", "s3cret")
    worker.send_input("t1", "size")
    assert cloudpickle.loads(worker.results(1)[0]["t1"][1]) == "large"
    assert worker.close() == 0


def test_a_dict_call_that_fails_in_enter_is_an_init_error(make_worker):
    worker = _class_worker(make_worker, "Configured", ((), {}))
    assert worker.read()[0]["type"] == "attach"
    _answer_object_call(worker, "GetDict", {"code": "NOT_FOUND", "message": 'no dict "settings"'})
    header, _ = worker.read()
    assert header["type"] == "init_error"
    assert header["message"] == (
        "@enter method Configured.load failed, so this container serves no input: "
        'levers9.errors.ControlplaneError: GetDict failed: NOT_FOUND: no dict "settings"'
    )
    assert worker.process.wait(timeout=10) == 1
