"""The function of test_dict_queue.py that uses a Dict and Queues from
inside its container: one function, so the suite keeps one more warm
container, not several."""

import queue

from levers9 import ControlplaneError, Dict, Queue, function


@function
def use_objects(op, name):
    """`op` picks what to do with the dict and the queues called `name`."""
    d = Dict.from_name(name)
    jobs = Queue.from_name(name)
    done = Queue.from_name(f"{name}-done", create_if_missing=True)
    if op == "round_trip":
        # Reads what the caller put, writes back, and tries the limits and
        # a missing name from in here too.
        d["out"] = d["in"] * 2
        items = jobs.get_many(10, timeout=10)
        done.put_many([i * 10 for i in items])
        try:
            jobs.get(timeout=0.5)
            waited = "an item"
        except queue.Empty:
            waited = "empty"
        try:
            d["big"] = b"x" * (2 << 20)
            too_big = "stored"
        except ControlplaneError as e:
            too_big = e.code
        try:
            Dict.from_name(f"{name}-missing").len()
            missing = "found"
        except ControlplaneError as e:
            missing = e.code
        return {"len": len(d), "waited": waited, "too_big": too_big, "missing": missing}
    if op == "wait_for_one":
        # Blocks until the caller puts, then answers through the dict. The
        # caller puts once it reads "waiting".
        d["waiting"] = True
        d["got"] = jobs.get(timeout=60)
        return "got it"
    raise ValueError(f"unknown op {op!r}")
