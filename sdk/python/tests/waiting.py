"""Waiting for an event in a test, rather than sleeping and hoping it came."""

import time


def wait_for(condition, within=30, every=0.01):
    """The first truthy value of `condition()`, polled every `every` seconds
    until `within` seconds pass (then the test fails)."""
    deadline = time.monotonic() + within
    while not (value := condition()):
        assert time.monotonic() < deadline, f"the condition never held within {within} s"
        time.sleep(every)
    return value
