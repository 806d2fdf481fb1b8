"""The lower-case words people read for the API's enum values.

The wire carries enums (``CONTAINER_STATE_RUNNING``); the CLI, the REST
JSON and this SDK's messages show the word, the value's name after its
enum's prefix in lower case (``running``), as they did when the wire
carried text. Takes the generated enum wrapper as an argument, so this
module imports no protobuf itself.
"""

from __future__ import annotations


def word(enum, value: int) -> str:
    """The word of ``value`` of ``enum`` (e.g. ``container_pb2.ContainerState``):
    ``""`` for the unspecified value, the number itself for one this SDK does
    not know (a newer controlplane's)."""
    if value == 0:
        return ""
    try:
        name = enum.Name(value)
    except ValueError:
        return str(value)
    prefix = enum.Name(0)[: -len("UNSPECIFIED")]
    return name[len(prefix):].lower()
