"""Generator functions the real-stack tests (test_generators.py) run in containers."""

import asyncio
import os
import time

from levers9 import function


class StreamError(Exception):
    """Raised mid-stream: it must come back as itself, after the items."""


@function
def countdown(n):
    for i in range(n, 0, -1):
        yield i


@function
async def async_squares(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i * i


@function
def fails_after(n):
    for i in range(n):
        yield i
    raise StreamError(f"failed after {n}")


@function
def stamped(n):
    """Each item with when it was made, to see how far ahead it ran."""
    for i in range(n):
        yield i, time.time()


@function
def big_items(n, size):
    for i in range(n):
        yield bytes([i]) * size


@function(max_containers=1)
def endless():
    i = 0
    while True:
        yield os.environ.get("LEVERS9_CONTAINER_ID"), i
        i += 1


@function
def plain(x):
    return x
