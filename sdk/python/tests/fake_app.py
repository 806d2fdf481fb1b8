"""Functions the client tests call through the in-process fake controlplane."""

import time

from fake_controlplane import FakeState

from levers9 import function


class AppError(Exception):
    """An exception class of the app, to check it comes back as itself."""


@function
def identity(x):
    return x


@function(cpu=0.5, memory="256Mi", retries=2, env={"MODE": "test"})
def add(a, b=0):
    return a + b


@function
def sleepy(seconds, value):
    time.sleep(seconds)
    return value


@function
def fail(message):
    raise AppError(message)


@function
def fail_on(x, bad):
    if x == bad:
        raise ValueError(f"bad input {x}")
    return x


@function
def unpicklable():
    import threading

    return threading.Lock()


@function
def end_in(state, message):
    raise FakeState(state, message)


@function
def printer():
    return "printed"


@function
def flaky():
    return "second time lucky"
