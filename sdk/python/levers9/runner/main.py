"""The function runner's process: connect, load the function, serve inputs.

Contract with the worker (frames in `levers9.wire`):

1. Connect to ``LEVERS9_CONTAINER_SERVER``, install output capture, import
   the module at ``LEVERS9_CODE_DIR/LEVERS9_MODULE_PATH`` and find
   ``LEVERS9_FUNCTION``. On failure send ``init_error`` (message,
   traceback) and exit 1; on success send ``hello`` with ``cancels``
   true (it answers cancel frames). Both carry
   ``LEVERS9_CONTAINER_SERVER_CREDENTIAL`` as ``credential`` when the
   worker set it (its ``containerServerAuth``). For a ``@cls`` class,
   the runner first sends ``attach`` (``container_id`` and the
   credential, as in ``hello``), after which the worker serves its Dict
   and Queue calls but sends no input; then it makes the instance with
   ``LEVERS9_CLASS_PARAMETERS`` and runs its ``@enter`` methods on
   another thread while this one reads the replies, and sends ``hello``
   once they return; one that fails sends ``init_error`` naming it (see
   `lifecycle`).
2. For each ``input`` frame, run the function in a pool of
   ``LEVERS9_CONCURRENCY`` threads, send its ``output`` frames, then exactly
   one ``result`` frame. Inputs that come while every thread is busy wait
   and start in the order they came, each on the thread that just sent a
   result: the worker starts their timeouts by that rule. An input whose
   body is a JSON object (a web endpoint's) gets its value as JSON (see
   `json_input`).
3. For a ``cancel`` frame, drop the input if it has not started and send
   its ``result`` with state ``cancelled`` (no body); if it runs already,
   send ``cancel_refused`` (a thread cannot be interrupted: the worker
   stops the container). A cancel for an input that ended is ignored, or
   refused in the moment between its result and its thread's end, which
   the worker, having read the result first, ignores.
   Code in the container that uses a ``Dict`` or ``Queue`` sends
   ``object_call`` frames; this thread hands each ``object_reply`` to the
   thread waiting for it (see `levers9.named`).
   A generator's input sends ``item`` frames (``index`` from 0, the
   pickled item as body) before its result, within a window of items the
   caller has not acknowledged; ``ack`` frames (``received``: items taken
   so far) open it again, and a cancel stops it at its next item with a
   ``cancelled`` result (see `stream`).
4. Exit 0 when the worker closes the socket or on SIGTERM, without waiting
   for running inputs: nobody is left to receive their results. A class's
   ``@exit`` methods run first (on SIGTERM, on another thread, so Dict and
   Queue replies are still read).

A spare (``LEVERS9_SPARE=1``, see docs/workers.md) starts before its
function is known: it connects, imports what a function's module imports
of the SDK, sends ``spare`` (``container_id``, the credential, and
``modules``: the top-level names in ``sys.modules``) and waits for an
``assign`` frame (``container_id``, ``env``, ``working_dir``). It sets
that environment, enters that directory and goes on at step 1 as that
container. A worker that closes the socket first was done with the
spare: it exits 0.

``LEVERS9_TASK_ID`` and ``LEVERS9_TASK_ATTEMPT`` (1 for the first try) are
set in ``os.environ`` before each call. The environment is per process, so
with concurrency > 1 they hold the values of whichever input started last.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

from .. import named, wire
from ..callables import yields
from ..modules import find_attribute, load_file
from . import capture, execute, json_input, lifecycle, stream
from .pool import Pool

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import Callable

# The worker listens before it starts the container, but a slow bind or a
# restart of the container server should not cost the container.
_CONNECT_ATTEMPTS_SECONDS = 10.0


def log(message: str) -> None:
    sys.__stderr__.write(f"levers9 runner: {message}\n")
    sys.__stderr__.flush()


class Connection:
    """The socket to the worker; frames from several threads never interleave."""

    def __init__(self, sock: socket.socket):
        self._sock = sock
        self._lock = threading.Lock()
        self.reader = sock.makefile("rb")

    def send(self, header: dict, body: bytes = b"") -> None:
        with self._lock:
            wire.write_frame(self._sock, header, body)


def connect(path: str) -> Connection:
    deadline = time.monotonic() + _CONNECT_ATTEMPTS_SECONDS
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return Connection(sock)
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def load_function(code_dir: str, module_path: str, qualname: str) -> Callable:
    """The plain function to call, unwrapped from its levers9 Function; for
    a ``@cls`` class, its `lifecycle.Lifecycle`, not yet entered."""
    module = load_file(os.path.join(code_dir, module_path))
    target = find_attribute(module, qualname)
    # Only a module that imported levers9's functions (or classes) can hold
    # a Function (or a Cls): a plain function's container spares importing
    # them, and classes' slow imports are for @cls containers only.
    functions, classes = sys.modules.get("levers9.functions"), sys.modules.get("levers9.classes")
    if functions is not None and isinstance(target, functions.Function):
        return target.raw_f
    if classes is not None and isinstance(target, classes.Cls):
        return lifecycle.Lifecycle(target, os.environ.pop(lifecycle.PARAMETERS_VARIABLE, ""))
    if callable(target):
        return target
    raise TypeError(f"{qualname} in {module_path} is a {type(target).__name__}, not a function")


def _exit_now(code: int) -> None:
    """Leaves without joining task threads (a stuck input must not keep us alive)."""
    for out in (sys.__stdout__, sys.__stderr__):
        try:
            out.flush()
        except Exception:  # a closed or broken stream; nothing to save
            pass
    os._exit(code)


def _settings(names=("LEVERS9_CONTAINER_SERVER", "LEVERS9_MODULE_PATH", "LEVERS9_FUNCTION")):
    missing = [name for name in names if not os.environ.get(name)]
    if missing:
        raise SystemExit(
            f"levers9 runner: {', '.join(missing)} not set; the runner is started by a levers9 worker, not by hand"
        )
    return os.environ


def main() -> int:
    spare = os.environ.pop("LEVERS9_SPARE", "") == "1"
    env = _settings(("LEVERS9_CONTAINER_SERVER",)) if spare else _settings()
    container_id = env.get("LEVERS9_CONTAINER_ID", "")
    # Out of the environment before the user's module is imported, so the
    # function's subprocesses do not inherit it.
    credential = {"credential": c} if (c := os.environ.pop("LEVERS9_CONTAINER_SERVER_CREDENTIAL", "")) else {}
    signal.signal(signal.SIGTERM, lambda *_: _exit_now(0))

    try:
        conn = connect(env["LEVERS9_CONTAINER_SERVER"])
    except OSError as e:
        log(f"cannot connect to the container server at {env['LEVERS9_CONTAINER_SERVER']}: {e}")
        return 1
    if spare:
        container_id = _wait_for_function(conn, container_id, credential)
        if container_id is None:
            return 0
        env = _settings()
    code_dir = env.get("LEVERS9_CODE_DIR") or os.getcwd()
    module_path, qualname = env["LEVERS9_MODULE_PATH"], env["LEVERS9_FUNCTION"]

    # Before the import, so a module that makes a Dict or Queue at import
    # (lazy: nothing is called then) binds it to the worker, not to grpc.
    container_objects = named.attach_container(conn.send)
    # Before the import, so logging handlers the module sets up bind to the
    # capturing streams and what they log during an input reaches the caller.
    router = capture.OutputRouter(conn.send)
    capture.install(router)
    try:
        concurrency = int(env.get("LEVERS9_CONCURRENCY") or "1")
        if concurrency < 1:
            raise ValueError(f"LEVERS9_CONCURRENCY must be at least 1, got {concurrency}")
        fn = load_function(code_dir, module_path, qualname)
    except BaseException as e:  # SystemExit in the module's own code is a load failure too
        _refuse_to_start(conn, credential, _load_failure(qualname, module_path, e))
        return 1

    hello = {"type": "hello", "container_id": container_id, "cancels": True, **credential}
    pool = Pool(concurrency, "levers9-task")
    if isinstance(fn, lifecycle.Lifecycle):
        # The credential first, so the worker serves the Dict and Queue
        # calls of @enter; it sends no input before the hello that the
        # enter thread sends once @enter returns.
        conn.send({"type": "attach", "container_id": container_id, **credential})
        # On another thread, so this one goes on reading the replies to the
        # @exit methods' Dict and Queue calls; the worker's SIGKILL after
        # its grace bounds them. Before @enter has returned, there is no
        # instance and @exit does not run.
        signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=_exit_after, args=(fn,), daemon=True).start())
        entering = threading.Thread(
            target=_enter_then_hello,
            args=(conn, fn, hello, credential, qualname, module_path),
            name="levers9-enter",
            daemon=True,
        )
    else:
        conn.send(hello)
        entering = None
    # From here on this thread reads the replies to Dict and Queue calls.
    container_objects.serving = True
    if entering is not None:
        entering.start()
    # An @asgi app's streamed answers are items too (see asgi_host), and
    # so are the items of a class's methods that yield.
    streamed = yields(fn) or _is_asgi(fn) or (isinstance(fn, lifecycle.Lifecycle) and fn.yields)
    serve(conn, router, pool, fn, qualname, stream.Streams() if streamed else None)
    router.flush()
    if isinstance(fn, lifecycle.Lifecycle):
        fn.exit()
    _exit_now(0)
    return 0  # not reached; keeps the signature honest for tests that patch os._exit


def _wait_for_function(conn: Connection, container_id: str, credential: dict):
    """A spare's wait for its function (see the contract above): the
    function's container id, or None if the worker closed the socket."""
    import importlib

    # What a function's module imports of the SDK, loaded while nobody waits.
    import levers9.functions  # noqa: F401

    modules = sorted({name.partition(".")[0] for name in sys.modules})
    conn.send({"type": "spare", "container_id": container_id, "modules": modules, **credential})
    while True:
        frame = wire.read_frame(conn.reader)
        if frame is None:
            return None
        header, _ = frame
        if header["type"] == "assign":
            break
        log(f"ignoring a frame of type {header['type']!r} before the spare's function")
    os.environ.update({str(k): str(v) for k, v in header.get("env", {}).items()})
    # The code was linked into its directory after the import system had
    # listed it empty.
    importlib.invalidate_caches()
    if header.get("working_dir"):
        os.chdir(header["working_dir"])
    return str(header.get("container_id", ""))


def _load_failure(qualname: str, module_path: str, e: BaseException) -> str:
    return f"cannot load {qualname} from {module_path}: {execute.describe(e)}"


def _enter_then_hello(
    conn: Connection, instance: lifecycle.Lifecycle, hello: dict, credential: dict, qualname: str, module_path: str
) -> None:
    """Runs a class's @enter methods (on their own thread, while the main
    one reads the replies to their Dict and Queue calls), then says hello;
    if one fails, tells the worker why and leaves with status 1."""
    try:
        instance.enter()
    except lifecycle.EnterError as e:
        _refuse_to_start(conn, credential, str(e))
        _exit_now(1)
    except BaseException as e:  # SystemExit in @enter fails it too
        _refuse_to_start(conn, credential, _load_failure(qualname, module_path, e))
        _exit_now(1)
    try:
        conn.send(hello)
    except OSError as e:  # the worker is gone: the main thread sees it too, and ends
        log(f"cannot say hello to the worker: {e}")


def _refuse_to_start(conn: Connection, credential: dict, message: str) -> None:
    """Tells the worker why this container serves no input (its inputs fail with `message`)."""
    log(message)
    try:
        failure = sys.exc_info()[1]
        text = execute.formatted(failure, failure.__traceback__) if failure is not None else ""
        conn.send({"type": "init_error", **credential, "message": message, "traceback": text})
    except OSError:
        pass


def _exit_after(instance: lifecycle.Lifecycle) -> None:
    """Runs a class's @exit methods, then leaves."""
    try:
        instance.exit()
    finally:
        _exit_now(0)


def serve(conn: Connection, router: capture.OutputRouter, pool, fn: Callable, name: str, streams=None) -> None:
    """Reads frames until the worker closes the socket; `streams` when `fn`
    is a generator, whose inputs stream items."""
    held = _Held(streams)
    while True:
        try:
            frame = wire.read_frame(conn.reader)
        except (wire.WireError, OSError) as e:
            log(f"connection to the worker broken: {e}")
            return
        if frame is None:
            return
        header, body = frame
        if header["type"] == "input" and streams is not None:
            task_id = str(header.get("task_id", ""))
            # Opened here, not on the task's thread, so a cancel that comes
            # as it starts finds a generator to stop.
            credit = streams.open(task_id)
            future = pool.submit(_run_generator_task, conn, router, credit, fn, name, header, body)
            # Also when the input is cancelled before it starts.
            future.add_done_callback(lambda _, t=task_id, c=credit: streams.close(t, c))
            held.add(task_id, future)
        elif header["type"] == "input":
            held.add(str(header.get("task_id", "")), pool.submit(_run_task, conn, router, fn, name, header, body))
        elif header["type"] == "object_reply":
            named.answer(header, body)
        elif header["type"] == "ack":
            if streams is not None:
                streams.ack(str(header.get("task_id", "")), int(header.get("received", 0)))
        elif header["type"] == "cancel":
            held.cancel(conn, str(header.get("task_id", "")))
        else:
            # A newer worker may send more; an old runner ignores what it
            # does not know instead of dying.
            log(f"ignoring a frame of unknown type {header['type']!r}")


class _Held:
    """The inputs not yet ended, by task id, so a cancel finds its input."""

    def __init__(self, streams=None):
        self._lock = threading.Lock()
        self._futures: dict = {}
        self._streams = streams

    def add(self, task_id: str, future) -> None:
        with self._lock:
            self._futures[task_id] = future
        future.add_done_callback(lambda f: self._forget(task_id, f))

    def _forget(self, task_id: str, future) -> None:
        # A retry of the same task on this container may have taken the
        # entry already.
        with self._lock:
            if self._futures.get(task_id) is future:
                del self._futures[task_id]

    def cancel(self, conn: Connection, task_id: str) -> None:
        with self._lock:
            future = self._futures.get(task_id)
        if future is None:
            return
        if future.cancel():
            conn.send({"type": "result", "task_id": task_id, "state": "cancelled", "message": "cancelled before it started"})
        elif future.done():
            pass
        elif self._streams is not None and self._streams.cancel(task_id):
            pass  # a generator: it stops at its next item and says cancelled
        else:
            conn.send({"type": "cancel_refused", "task_id": task_id})


def _begin(router: capture.OutputRouter, header: dict) -> str:
    task_id = str(header.get("task_id", ""))
    os.environ["LEVERS9_TASK_ID"] = task_id
    os.environ["LEVERS9_TASK_ATTEMPT"] = str(header.get("attempt", 1))
    router.begin_task(task_id)
    return task_id


def _send_result(conn: Connection, task_id: str, result) -> None:
    try:
        conn.send(*result)
    except OSError as e:
        log(f"cannot send the result of task {task_id}: {e}")


def _is_asgi(fn: Callable) -> bool:
    return getattr(fn, "__levers9_asgi__", False)


def _run_generator_task(conn, router, credit, fn: Callable, name: str, header: dict, body: bytes):
    task_id = _begin(router, header)
    if _is_asgi(fn):
        from .asgi_host import run  # only an @asgi container loads it (and asyncio)
    else:
        run = stream.run
    try:
        # A worker gone while an item was on its way fails the stream like
        # an error of the generator's; its result then fails to send too.
        result = run(conn.send, lambda: router.flush_pending(task_id), credit, fn, name, task_id, body)
    finally:
        router.end_task(task_id)
    _send_result(conn, task_id, result)


def _run_task(conn: Connection, router: capture.OutputRouter, fn: Callable, name: str, header: dict, body: bytes):
    task_id = _begin(router, header)
    as_json = json_input.is_json(body)
    try:
        value = json_input.call(fn, body) if as_json else execute.call_function(fn, body)
    except BaseException as e:  # the function's SystemExit is its failure, not ours
        result = execute.error_result(task_id, e)
    else:
        result = (json_input.complete_result if as_json else execute.complete_result)(task_id, name, value)
    finally:
        # Output first, so the caller sees everything printed before the result.
        router.end_task(task_id)
    _send_result(conn, task_id, result)
