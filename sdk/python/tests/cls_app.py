"""The classes that the real-stack tests (test_cls.py) run in containers."""

import os

from levers9 import Dict, Queue, cls, enter, exit, method


@cls(keep_warm_seconds=60)
class Counter:
    """Counts its inputs per container: @enter runs once, methods share it."""

    def __init__(self, label: str = "plain"):
        self.label = label

    @enter
    def start(self):
        self.entered = getattr(self, "entered", 0) + 1
        self.calls = 0

    @method
    def bump(self, x):
        self.calls += 1
        return {"label": self.label, "entered": self.entered, "calls": self.calls, "pid": os.getpid(), "x": x}

    @method
    async def square(self, x):
        return x * x

    @method
    def countdown(self, n):
        for i in range(n, 0, -1):
            yield {"label": self.label, "entered": self.entered, "i": i, "pid": os.getpid()}


@cls(keep_warm_seconds=2)
class Reporter:
    """Says on the queue `name` when its container stops (idle for 2 s)."""

    def __init__(self, name: str = "cls-exit"):
        self.name = name

    @enter
    def start(self):
        self.seen = []

    @method
    def see(self, x):
        self.seen.append(x)
        return os.getpid()

    @exit
    def report(self):
        Queue.from_name(self.name).put({"seen": self.seen, "pid": os.getpid()})


@cls
class Configured:
    """Reads its settings in @enter from the dict `name`, which the caller filled."""

    def __init__(self, name: str = "cls-settings"):
        self.name = name

    @enter
    def load(self):
        settings = Dict.from_name(self.name)
        self.size = settings["size"]
        settings["entered"] = os.getpid()

    @method
    def settings(self):
        return {"size": self.size, "pid": os.getpid()}


@cls
class Unready:
    @enter
    def load(self):
        raise FileNotFoundError("/weights/model.bin")

    @method
    def predict(self, x):
        return x
