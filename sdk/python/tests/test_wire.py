"""Frames between runner and worker."""

import io
import struct

import pytest

from levers9.wire import MAX_HEADER_BYTES, WireError, encode_frame, read_frame


def _bytes(*frames):
    out = b""
    for header, body in frames:
        prefix, body = encode_frame(header, body)
        out += prefix + body
    return out


def test_frames_round_trip_in_order_with_and_without_bodies():
    frames = [
        ({"type": "hello", "container_id": "c-1"}, b""),
        ({"type": "input", "task_id": "t", "attempt": 2}, b"\x00\x01" * 1000),
        ({"type": "output", "task_id": "t", "stream": "stdout"}, "héllo ✓\n".encode()),
    ]
    stream = io.BytesIO(_bytes(*frames))
    assert [read_frame(stream) for _ in frames] == frames
    assert read_frame(stream) is None


def test_the_layout_is_two_big_endian_lengths_with_json_then_body():
    prefix, body = encode_frame({"type": "x"}, b"abc")
    head = b'{"type":"x"}'
    assert prefix == struct.pack(">I", len(head)) + head + struct.pack(">I", 3)
    assert body == b"abc"


def test_unicode_in_headers_is_utf8_not_escaped():
    prefix, _ = encode_frame({"type": "result", "message": "ValueError: ✓"})
    assert "✓".encode() in prefix


@pytest.mark.parametrize(
    "raw, message",
    [
        (struct.pack(">I", 10) + b'{"ty', "middle of a frame's header"),
        (struct.pack(">I", 2) + b"{}" + struct.pack(">I", 0), 'string "type"'),
        (struct.pack(">I", 3) + b"abc" + struct.pack(">I", 0), "not UTF-8 JSON"),
        (struct.pack(">I", MAX_HEADER_BYTES + 1), "over the"),
        (struct.pack(">I", 12) + b'{"type":"x"}' + struct.pack(">I", 5) + b"ab", "frame's body"),
        (b"\x00\x00", "header length"),
    ],
)
def test_malformed_or_truncated_frames_are_wire_errors(raw, message):
    with pytest.raises(WireError, match=message):
        read_frame(io.BytesIO(raw))
