"""Functions the real-stack tests (test_remote.py) run in containers.

Kept in their own small module: the code object is this directory.
"""

import os
import sys
import time

from levers9 import function


class AppError(Exception):
    """An exception class of the app: it must come back as itself."""


@function
def add(a, b=0):
    return a + b


@function
def square(x):
    return x * x


@function
def fail(message):
    raise AppError(message)


@function
def divide(a, b):
    return a / b


@function(timeout=2)
def sleep_past_timeout(seconds):
    time.sleep(seconds)
    return "should have timed out"


@function
def sleep_for(seconds):
    time.sleep(seconds)
    return seconds


@function(retries=1)
def fails_on_first_attempt():
    # LEVERS9_TASK_ATTEMPT is set by the runner before each call. It lives in
    # the process environment, so it is only exact with concurrency 1 (the default).
    attempt = os.environ["LEVERS9_TASK_ATTEMPT"]
    if attempt == "1":
        raise RuntimeError("failing the first attempt on purpose")
    return attempt


@function
def container_id():
    return os.environ["LEVERS9_CONTAINER_ID"]


@function(concurrency=4, max_containers=1)
def sleep_and_report(seconds):
    started = time.time()
    time.sleep(seconds)
    return os.environ["LEVERS9_CONTAINER_ID"], started, time.time()


@function(memory="1Gi")
def echo(data):
    return data


@function
def say(text):
    print(text)
    print(f"to stderr: {text}", file=sys.stderr)
    return len(text)


@function(concurrency=50)
def identity(x):
    return x


@function
def nap(seconds):
    time.sleep(seconds)
    return os.environ["LEVERS9_CONTAINER_ID"]


@function
def announce_then_sleep(seconds):
    print(f"task {os.environ['LEVERS9_TASK_ID']} started", flush=True)
    time.sleep(seconds)
    return seconds


if __name__ == "__main__":
    # test_remote.py interrupts this caller with Ctrl-C (SIGINT).
    announce_then_sleep.remote(120)


def sdk_compiled():
    """Whether this container loaded the SDK from .pyc files compiled for
    its Python (left plain: the test wraps it with an env of its own so
    that each call gets a new stub, and so a new container)."""
    import importlib.util

    import levers9.functions as sdk

    cached = sdk.__spec__.cached
    if not cached or not os.path.isfile(cached):
        return False
    with open(cached, "rb") as f:
        return f.read(4) == importlib.util.MAGIC_NUMBER
