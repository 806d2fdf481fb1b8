"""Attributes what a function prints to the input it is running.

``sys.stdout`` and ``sys.stderr`` are replaced by proxies. A write made in a
thread that is running a task goes to the real stream (so the container log
keeps everything) *and* into that task's buffer, which is sent to the worker
as ``output`` frames; a write made anywhere else goes to the real stream only.

Buffers are flushed every 20 ms, when one passes 64 KiB, and when the task
ends (before its result), so a loop of prints becomes a few frames rather
than one per write, while output still shows up live for the caller.

Not captured per task: threads the function starts itself (the task is known
per thread), and writes that bypass ``sys.stdout`` (subprocesses, C code
writing to fd 1). Those still reach the container log.
"""

from __future__ import annotations

import sys
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import Callable, Dict, Optional, Tuple

# Short enough that output feels live to a person; long enough that a print
# loop is batched into few frames.
FLUSH_INTERVAL_SECONDS = 0.02
# A task printing a lot is flushed before its buffer grows without bound.
MAX_BUFFERED_BYTES = 64 * 1024


class OutputRouter:
    """Per-task output buffers and the thread that flushes them as frames."""

    def __init__(self, send: Callable[[dict, bytes], None]):
        self._send = send
        self._local = threading.local()
        self._buffers: Dict[Tuple[str, str], bytearray] = {}
        self._buffers_lock = threading.Lock()
        # Held while frames are sent, so two flushes of one task (timer and
        # task end) cannot reorder its output.
        self._flush_lock = threading.Lock()
        self._stopped = threading.Event()
        # Set when output is buffered: an idle runner's flusher sleeps
        # rather than waking every interval (fifty times a second, in every
        # warm container).
        self._pending = threading.Event()
        self._flusher = threading.Thread(target=self._flush_periodically, name="levers9-output", daemon=True)
        self._flusher.start()

    def current_task(self) -> Optional[str]:
        return getattr(self._local, "task_id", None)

    def begin_task(self, task_id: str) -> None:
        """From now on, writes from this thread belong to `task_id`."""
        self._local.task_id = task_id

    def end_task(self, task_id: str) -> None:
        """Stops attributing this thread's writes and sends what is buffered."""
        self._local.task_id = None
        # Most tasks print nothing: no locks for them. A dict's truth is read
        # atomically, and a buffer of this task can only be added by this
        # thread, which is here.
        if self._buffers:
            self.flush(task_id)

    def flush_pending(self, task_id: str) -> None:
        """Sends what `task_id` printed so far, if anything (before a
        generator's item, so the caller sees them in order)."""
        if self._buffers:
            self.flush(task_id)

    def capture(self, stream: str, data: bytes) -> None:
        task_id = self.current_task()
        if task_id is None or not data:
            return
        with self._buffers_lock:
            buffer = self._buffers.setdefault((task_id, stream), bytearray())
            buffer += data
            full = len(buffer) >= MAX_BUFFERED_BYTES
        self._pending.set()
        if full:
            self.flush(task_id)

    def flush(self, task_id: Optional[str] = None) -> None:
        """Sends the buffered output of one task, or of all tasks."""
        with self._flush_lock:
            with self._buffers_lock:
                keys = [k for k in self._buffers if task_id is None or k[0] == task_id]
                taken = [(k, self._buffers.pop(k)) for k in keys]
            for (tid, stream), data in taken:
                if data:
                    try:
                        self._send({"type": "output", "task_id": tid, "stream": stream}, bytes(data))
                    except OSError:
                        # The worker is gone; the main loop sees the closed
                        # socket and exits. Output has nowhere to go.
                        return

    def stop(self) -> None:
        self._stopped.set()
        self._pending.set()

    def _flush_periodically(self) -> None:
        while True:
            self._pending.wait()
            if self._stopped.wait(FLUSH_INTERVAL_SECONDS):
                return
            # Cleared before the flush: output buffered from now on sets it
            # again and is sent by the next round.
            self._pending.clear()
            self.flush()


class CapturingTextStream:
    """Stands in for sys.stdout / sys.stderr; see the module docs."""

    def __init__(self, real, stream: str, router: OutputRouter):
        self._real = real
        self._stream = stream
        self._router = router
        self.buffer = CapturingBinaryStream(getattr(real, "buffer", None), stream, router)

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._real.write(text)
        if self._router.current_task() is not None:
            # Encoded here, whole, so a multi-byte character is never split
            # across two frames.
            self._router.capture(self._stream, text.encode("utf-8", "replace"))
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        self._real.flush()

    def __getattr__(self, name):
        # encoding, fileno, isatty, ...: whatever the real stream answers.
        return getattr(self._real, name)


class CapturingBinaryStream:
    """``sys.stdout.buffer`` of a capturing stream: raw bytes, captured as they are."""

    def __init__(self, real, stream: str, router: OutputRouter):
        self._real = real
        self._stream = stream
        self._router = router

    def write(self, data):
        if self._real is None:
            raise OSError("this stream has no binary buffer")
        written = self._real.write(data)
        self._router.capture(self._stream, bytes(data))
        return written

    def flush(self):
        if self._real is not None:
            self._real.flush()

    def __getattr__(self, name):
        return getattr(self._real, name)


def install(router: OutputRouter) -> None:
    """Replaces sys.stdout and sys.stderr with capturing proxies."""
    for name in ("stdout", "stderr"):
        real = getattr(sys, name)
        reconfigure = getattr(real, "reconfigure", None)
        if reconfigure is not None:
            # The container's locale may be C/ASCII; a print of "✓" must not
            # fail the user's function because of it.
            try:
                reconfigure(encoding="utf-8", errors="backslashreplace")
            except (ValueError, OSError):
                pass
        setattr(sys, name, CapturingTextStream(real, name, router))
