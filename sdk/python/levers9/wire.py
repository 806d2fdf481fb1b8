"""Frames between the function runner and its worker, over the container's Unix socket.

A frame is::

    u32 big-endian H | H bytes: UTF-8 JSON object with a "type" | u32 big-endian B | B bytes: body

The header carries the small fields; the body carries pickles and output
bytes as they are, so a 50 MB argument is never base64-encoded into JSON.
Stdlib only: the runner runs in images that have nothing else.
"""

from __future__ import annotations

import json
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import BinaryIO, Optional, Tuple

_LENGTH = struct.Struct(">I")

# A header is a handful of short fields; a huge length means a peer that
# does not speak this protocol, and reading it would only exhaust memory.
MAX_HEADER_BYTES = 1024 * 1024
# Bodies are arguments and results, which gRPC already caps at 256 MiB on
# the way in; leave room for pickling overhead.
MAX_BODY_BYTES = 1024 * 1024 * 1024
# Bodies up to this size are copied behind their prefix and sent with it;
# larger ones are sent as they are rather than copied.
_JOIN_BELOW = 64 * 1024


class WireError(Exception):
    """The peer sent something that is not a frame of this protocol."""


def encode_frame(header: dict, body: bytes = b"") -> Tuple[bytes, bytes]:
    """The frame as (prefix, body): send both, in order; the body is not copied."""
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return _LENGTH.pack(len(head)) + head + _LENGTH.pack(len(body)), body


def write_frame(sock, header: dict, body: bytes = b"") -> None:
    """Sends one frame on a socket; callers sharing a socket hold a lock around it."""
    prefix, body = encode_frame(header, body)
    if len(body) <= _JOIN_BELOW:
        # One send: the peer wakes once for a small frame, not twice.
        sock.sendall(prefix + body)
        return
    sock.sendall(prefix)
    sock.sendall(body)


def read_frame(stream: BinaryIO) -> Optional[Tuple[dict, bytes]]:
    """The next (header, body) from a buffered binary stream; None at a clean end.

    Raises WireError for a frame cut short or malformed.
    """
    first = stream.read(_LENGTH.size)
    if not first:
        return None
    header_len = _unpack_length(first, "header length")
    if header_len > MAX_HEADER_BYTES:
        raise WireError(f"frame header of {header_len} bytes is over the {MAX_HEADER_BYTES}-byte limit")
    raw_header = _read_exactly(stream, header_len, "header")
    try:
        header = json.loads(raw_header.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise WireError(f"frame header is not UTF-8 JSON: {e}") from e
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise WireError(f"frame header must be a JSON object with a string \"type\"; got {raw_header[:200]!r}")
    body_len = _unpack_length(_read_exactly(stream, _LENGTH.size, "body length"), "body length")
    if body_len > MAX_BODY_BYTES:
        raise WireError(f"frame body of {body_len} bytes is over the {MAX_BODY_BYTES}-byte limit")
    body = _read_exactly(stream, body_len, "body") if body_len else b""
    return header, body


def _unpack_length(raw: bytes, what: str) -> int:
    if len(raw) != _LENGTH.size:
        raise WireError(f"connection closed in the middle of a frame's {what}")
    return _LENGTH.unpack(raw)[0]


def _read_exactly(stream: BinaryIO, n: int, what: str) -> bytes:
    data = stream.read(n)
    # A buffered reader returns fewer bytes only at end of stream.
    if len(data) != n:
        raise WireError(f"connection closed in the middle of a frame's {what} ({len(data)} of {n} bytes)")
    return data
