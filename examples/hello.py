"""The first function: run it with `python examples/hello.py` once `levers9 up`
is running (make quickstart does both)."""

import platform

from levers9 import function


@function(cpu=0.25, memory="256Mi")
def hello(name):
    # Runs in a sandboxed container on a worker, not on this machine.
    print(f"hello from {platform.node()}, running Python {platform.python_version()}")
    return f"Hello, {name}!"


@function
def square(x):
    return x * x


if __name__ == "__main__":
    print(hello.remote("levers9"))
    print("squares:", list(square.map(range(10))))
