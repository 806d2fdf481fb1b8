"""Functions of test_spares.py: two of one shape (image, SDK, resources),
so the second's cold start can adopt the spare the first one's left."""

import os

from levers9 import Secret, function

GREETING = Secret.from_dict({"L9_SPARE_SECRET": "sealed-for-the-spare"})


@function()
def first():
    return "first"


@function(env={"L9_GREETING": "hi"}, secrets=[GREETING])
def second():
    """What the container saw: whether it started as a spare (its process's
    first environment, which the runner's own changes do not touch), and
    the call's environment, code and working directory."""
    with open("/proc/self/environ", "rb") as f:
        started_with = f.read().split(b"\0")
    return {
        "started_as_spare": b"LEVERS9_SPARE=1" in started_with,
        "greeting": os.environ.get("L9_GREETING"),
        "secret": os.environ.get("L9_SPARE_SECRET"),
        "spare_variable": os.environ.get("LEVERS9_SPARE"),
        "container_id": os.environ.get("LEVERS9_CONTAINER_ID"),
        "stub_id": os.environ.get("LEVERS9_STUB_ID", ""),
        "module": __file__,
        "cwd": os.getcwd(),
    }
