"""Sandboxes: a long-running container to run commands in, one after another.

``Sandbox.create`` starts a container (through ContainerService.RunContainer)
whose own process only waits for ``timeout`` seconds; ``sb.exec(...)`` runs a
command in it (ContainerService.ExecContainer) with its stdout and stderr
streamed as they come and its stdin open for writing; ``sb.terminate()``
stops it. Its own process is ``python3`` sleeping, and files go in and out
through ``exec`` (``sh`` and ``cat``), so the image needs those three.

Output is read from the controlplane as the caller reads it: a caller that
does not read slows the command down (its writes block) rather than filling
memory. Reading only one of stdout and stderr while the other is written
keeps the other in this process's memory until it is read or ``wait()``
returns.
"""

from __future__ import annotations

import codecs
import os
import queue
import threading
import time
from collections import deque
from typing import Dict, Iterator, Optional, Union

from .errors import ControlplaneError, Levers9Error
from .words import word

# How long create() waits for the container to run (an image pull included).
START_TIMEOUT_SECONDS = 300.0
# How long terminate() waits for the container to be gone.
STOP_TIMEOUT_SECONDS = 30.0
# Stdin is sent in chunks of at most this size; this many wait at most.
STDIN_CHUNK_BYTES = 64 * 1024
STDIN_QUEUE_CHUNKS = 16
_POLL_SECONDS = 0.2


def _is_final(container_pb2, state: int) -> bool:
    """Whether a container in ``state`` will change no more."""
    return state in (
        container_pb2.CONTAINER_STATE_EXITED,
        container_pb2.CONTAINER_STATE_FAILED,
        container_pb2.CONTAINER_STATE_LOST,
    )


class SandboxTerminated(ControlplaneError):
    """The sandbox's container is not running any more (terminated, timed out,
    or its worker went away): start a new one with ``Sandbox.create``."""


class SandboxFileError(Levers9Error):
    """``put_file`` or ``get_file`` failed in the sandbox (no such file, no
    permission); the message carries the command's stderr."""


def _client():
    from .client import get_client

    return get_client()


def _container_pb2():
    from .v1 import container_pb2, container_pb2_grpc

    return container_pb2, container_pb2_grpc


def _exec_error(client, error) -> Levers9Error:
    import grpc

    translated = client.translate(error, "ExecContainer")
    if error.code() == grpc.StatusCode.FAILED_PRECONDITION:
        return SandboxTerminated(str(translated), code="FAILED_PRECONDITION")
    return translated


class _Pump:
    """Reads the exec's events on demand, for whichever stream is read, and
    keeps those of the other stream until they are read."""

    def __init__(self, client, call, done: threading.Event):
        self._client = client
        self._call = call
        self._lock = threading.Lock()
        self._buffers: Dict[str, deque] = {"stdout": deque(), "stderr": deque()}
        # Set at the end; it also ends the request side (stdin).
        self.done = done
        self.returncode: Optional[int] = None
        self.error: Optional[Levers9Error] = None

    def _read_one(self) -> None:
        import grpc

        try:
            event = next(self._call)
        except StopIteration:
            self.error = Levers9Error("the exec ended without an exit code")
            self.done.set()
            return
        except grpc.RpcError as e:
            self.error = _exec_error(self._client, e)
            self.done.set()
            return
        kind = event.WhichOneof("kind")
        if kind == "exit_code":
            self.returncode = event.exit_code
            self.done.set()
        elif kind in self._buffers:
            self._buffers[kind].append(getattr(event, kind))

    def next_chunk(self, stream: str) -> Optional[bytes]:
        """The next chunk of `stream`, or None at its end."""
        with self._lock:
            while True:
                if self._buffers[stream]:
                    return self._buffers[stream].popleft()
                if self.done.is_set():
                    return None
                self._read_one()

    def finish(self) -> int:
        with self._lock:
            while not self.done.is_set():
                self._read_one()
        if self.error is not None:
            raise self.error
        assert self.returncode is not None  # done without an error means an exit code
        return self.returncode


class StreamReader:
    """A command's stdout or stderr: iterate it for chunks as they come, or
    ``read()`` it all. Text (str) unless the exec asked for ``text=False``."""

    def __init__(self, pump: _Pump, stream: str, text: bool):
        self._pump = pump
        self._stream = stream
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace") if text else None

    def __iter__(self) -> Iterator[Union[str, bytes]]:
        while True:
            chunk = self._pump.next_chunk(self._stream)
            if chunk is None:
                if self._decoder is not None:
                    tail = self._decoder.decode(b"", final=True)
                    if tail:
                        yield tail
                if self._pump.error is not None:
                    raise self._pump.error
                return
            if self._decoder is None:
                yield chunk
            else:
                text = self._decoder.decode(chunk)
                if text:
                    yield text

    def read(self) -> Union[str, bytes]:
        """Everything the command writes to this stream, once it closed it."""
        parts = list(self)
        return "".join(parts) if self._decoder is not None else b"".join(parts)


class StreamWriter:
    """A command's stdin. ``write`` blocks while the command has not taken
    what was written before (a bounded queue); ``close`` sends EOF."""

    def __init__(self, chunks: "queue.Queue", done: threading.Event):
        self._chunks = chunks
        self._done = done
        self._closed = False

    def write(self, data: Union[str, bytes]) -> None:
        if self._closed:
            raise ValueError("write to a closed stdin")
        if isinstance(data, str):
            data = data.encode()
        for start in range(0, len(data), STDIN_CHUNK_BYTES):
            self._put(bytes(data[start : start + STDIN_CHUNK_BYTES]))

    def _put(self, item) -> None:
        while not self._done.is_set():
            try:
                self._chunks.put(item, timeout=_POLL_SECONDS)
                return
            except queue.Full:
                continue

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._put(None)


class SandboxProcess:
    """A command running in a sandbox (see ``Sandbox.exec``)."""

    def __init__(self, client, call, chunks: "queue.Queue", done: threading.Event, text: bool):
        self._pump = _Pump(client, call, done)
        self._done = done
        self.stdout = StreamReader(self._pump, "stdout", text)
        self.stderr = StreamReader(self._pump, "stderr", text)
        self.stdin = StreamWriter(chunks, done)

    @property
    def returncode(self) -> Optional[int]:
        """The exit code once the command ended (128+N for signal N), else None."""
        return self._pump.returncode

    def wait(self) -> int:
        """Waits for the command to end and returns its exit code. Output not
        read yet stays readable."""
        try:
            return self._pump.finish()
        finally:
            self._done.set()


def _requests(start, chunks: "queue.Queue", done: threading.Event):
    container_pb2, _ = _container_pb2()
    yield container_pb2.ExecRequest(start=start)
    while not done.is_set():
        try:
            chunk = chunks.get(timeout=_POLL_SECONDS)
        except queue.Empty:
            continue
        if chunk is None:
            yield container_pb2.ExecRequest(stdin_close=True)
            break
        yield container_pb2.ExecRequest(stdin=chunk)
    # Keeps the request side open until the exec ends: closing it early
    # would be read as the end of stdin.
    done.wait()


class Sandbox:
    """A running container to exec commands in. Use ``Sandbox.create`` or
    ``Sandbox.from_id``; as a context manager it is terminated on exit."""

    def __init__(self, container_id: str):
        self.object_id = container_id

    def __repr__(self):
        return f"Sandbox({self.object_id!r})"

    @classmethod
    def create(
        cls,
        image,
        cpu: Optional[float] = None,
        memory: Optional[int] = None,
        timeout: int = 600,
        pool: str = "",
        env: Optional[Dict[str, str]] = None,
    ) -> "Sandbox":
        """Starts a sandbox and waits until it runs.

        image: an ``Image`` (built first if it has steps) or a reference
        (required: a plain ``Image()`` is not supported yet). cpu: cores (e.g. 0.5);
        memory: MiB; timeout: seconds until the sandbox ends by itself.
        """
        if not isinstance(timeout, int) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds; got {timeout!r}")
        client = _client()
        ref = _image_ref(image, client)
        container_pb2, container_pb2_grpc = _container_pb2()
        request = container_pb2.RunContainerRequest(
            image=ref,
            args=["python3", "-c", f"import time; time.sleep({timeout})"],
            env=dict(env or {}),
            pool=pool,
            cpu_millicores=int(round(cpu * 1000)) if cpu else 0,
            memory_mib=int(memory or 0),
        )
        answer = client.call_service(container_pb2_grpc.ContainerServiceStub, "RunContainer", request)
        sandbox = cls(answer.container.container_id)
        sandbox._wait_running()
        return sandbox

    @classmethod
    def from_id(cls, sandbox_id: str) -> "Sandbox":
        """The sandbox of this id in the caller's workspace; NOT_FOUND otherwise."""
        sandbox = cls(sandbox_id)
        sandbox._get()
        return sandbox

    def _get(self):
        container_pb2, container_pb2_grpc = _container_pb2()
        request = container_pb2.GetContainerRequest(container_id=self.object_id)
        return _client().call_service(container_pb2_grpc.ContainerServiceStub, "GetContainer", request).container

    def _wait_running(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        container_pb2, _ = _container_pb2()
        while True:
            container = self._get()
            state = word(container_pb2.ContainerState, container.state)
            if container.state == container_pb2.CONTAINER_STATE_RUNNING:
                return
            if _is_final(container_pb2, container.state):
                raise SandboxTerminated(
                    f"sandbox {self.object_id} ended before it ran ({state}: {container.message})",
                    code="FAILED_PRECONDITION",
                )
            if time.monotonic() > deadline:
                raise Levers9Error(
                    f"sandbox {self.object_id} did not start within {START_TIMEOUT_SECONDS:g} s "
                    f"(it is {state}): is a worker of its pool up? See levers9 container get"
                )
            time.sleep(_POLL_SECONDS)

    def exec(
        self,
        *args: str,
        env: Optional[Dict[str, str]] = None,
        workdir: Optional[str] = None,
        text: bool = True,
    ) -> SandboxProcess:
        """Runs a command in the sandbox; returns at once with its process.

        Raises ``SandboxTerminated`` when the sandbox no longer runs.
        """
        if not args or not all(isinstance(a, str) for a in args):
            raise ValueError(f"exec needs a command as strings, e.g. exec('ls', '-l'); got {args!r}")
        client = _client()
        container_pb2, container_pb2_grpc = _container_pb2()
        start = container_pb2.ExecStartRequest(
            container_id=self.object_id, args=list(args), env=dict(env or {}), working_dir=workdir or ""
        )
        chunks: "queue.Queue" = queue.Queue(maxsize=STDIN_QUEUE_CHUNKS)
        done = threading.Event()
        stub = client.service(container_pb2_grpc.ContainerServiceStub)
        call = stub.ExecContainer(_requests(start, chunks, done), metadata=client.metadata)
        # The controlplane answers its headers once the command is on its
        # way, or ends the call at once when it cannot run: say so here.
        call.initial_metadata()
        if call.done() and call.code() is not None and call.code().name != "OK":
            done.set()
            raise _exec_error(client, call)
        return SandboxProcess(client, call, chunks, done, text)

    def put_file(self, local_path: Union[str, os.PathLike], remote_path: str) -> None:
        """Copies a local file into the sandbox (its directory must exist)."""
        with open(local_path, "rb") as f:
            data = f.read()
        p = self.exec("sh", "-c", 'cat > "$1"', "sh", remote_path, text=False)
        p.stdin.write(data)
        p.stdin.close()
        self._check(p, f"writing {remote_path}")

    def get_file(self, remote_path: str) -> bytes:
        """The contents of a file in the sandbox."""
        p = self.exec("cat", remote_path, text=False)
        data = p.stdout.read()
        self._check(p, f"reading {remote_path}")
        return data

    def _check(self, p: SandboxProcess, what: str) -> None:
        code = p.wait()
        if code != 0:
            err = p.stderr.read().decode(errors="replace").strip()
            raise SandboxFileError(f"{what} in sandbox {self.object_id} failed (exit {code}): {err}")

    def terminate(self) -> None:
        """Stops the sandbox and waits until it is gone."""
        container_pb2, container_pb2_grpc = _container_pb2()
        request = container_pb2.StopContainerRequest(container_id=self.object_id)
        _client().call_service(container_pb2_grpc.ContainerServiceStub, "StopContainer", request)
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        while not _is_final(container_pb2, self._get().state) and time.monotonic() < deadline:
            time.sleep(_POLL_SECONDS)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.terminate()


def _image_ref(image, client) -> str:
    """The reference of `image` (an Image, a string)."""
    from .image import Image

    if isinstance(image, str) and image.strip():
        return image.strip()
    if isinstance(image, Image):
        ref = image.build(client=client)
        if ref:
            return ref
    raise ValueError(
        "Sandbox.create needs an image to run: Image.from_registry('registry/name@sha256:...') or an "
        "Image with steps (built first); the controlplane's base image without steps is not supported yet"
    )
