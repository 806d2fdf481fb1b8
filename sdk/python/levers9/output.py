"""Shows a remote function's output in the caller's terminal as it arrives."""

from __future__ import annotations

import codecs
import sys
from typing import Dict, Tuple


class OutputPrinter:
    """Writes TaskOutputEvents to sys.stdout / sys.stderr, and retry notes.

    One incremental UTF-8 decoder per task and stream, so a character split
    across two chunks is printed whole; bytes that are not UTF-8 become U+FFFD.
    The streams are looked up on every write, so redirection (and pytest's
    capture) sees the output.
    """

    def __init__(self):
        self._decoders: Dict[Tuple[str, str], codecs.IncrementalDecoder] = {}

    def output(self, event) -> None:
        key = (event.task_id, event.stream)
        decoder = self._decoders.get(key)
        if decoder is None:
            decoder = self._decoders[key] = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._write(event.stream, decoder.decode(event.data))

    def retrying(self, event) -> None:
        reason = f": {event.reason}" if event.reason else ""
        self._write("stderr", f"levers9: task {event.task_id} failed{reason}; retrying (attempt {event.attempt})\n")

    def task_done(self, task_id: str) -> None:
        """Prints whatever partial character the task's streams still hold."""
        for stream in ("stdout", "stderr"):
            decoder = self._decoders.pop((task_id, stream), None)
            if decoder is not None:
                self._write(stream, decoder.decode(b"", final=True))

    def close(self) -> None:
        for task_id, _ in list(self._decoders):
            self.task_done(task_id)

    @staticmethod
    def _write(stream: str, text: str) -> None:
        if not text:
            return
        target = sys.stderr if stream == "stderr" else sys.stdout
        target.write(text)
        target.flush()
