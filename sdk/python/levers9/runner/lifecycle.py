"""A ``@cls`` stub's instance in its container: made and entered once,
its ``@method``s called by name, exited once when the container stops.

The worker starts a class's container with ``LEVERS9_CLASS_PARAMETERS``:
the instance's cloudpickled (args, kwargs), base64. Each input is
``((method name, *args), kwargs)`` (see `levers9.cls`), so the runner calls
the `Lifecycle` like a function and everything else (threads, results,
cancels, timeouts) is as for a function. A class with a method that yields
is served like a generator function (`yields`): each input may stream
items, and one that calls a plain method returns its value instead.
"""

from __future__ import annotations

import base64
import sys
import threading

from . import execute, pickling

PARAMETERS_VARIABLE = "LEVERS9_CLASS_PARAMETERS"


class EnterError(Exception):
    """An ``@enter`` method failed: the container cannot serve its inputs."""



def entered(cls, args: tuple, kwargs: dict):
    """An instance of the ``@cls`` `cls` made with the parameters, its
    ``@enter`` methods run in definition order; EnterError names the one
    that failed."""
    from ..classes import ENTER, marked

    user_cls = cls.user_cls
    try:
        instance = user_cls(*args, **kwargs)
    except Exception as e:
        raise EnterError(f"{user_cls.__qualname__}.__init__ failed: {execute.describe(e)}") from e
    for name, marker in marked(user_cls, ENTER).items():
        try:
            execute.settled(marker.fn(instance))
        except Exception as e:
            raise EnterError(
                f"@enter method {marker.fn.__qualname__} failed, so this container serves no input: {execute.describe(e)}"
            ) from e
    return instance


def streams(args: tuple) -> bool:
    """Whether a class's input (its method first in `args`) asks for the
    method's items: a ``.remote_gen`` call names it as `levers9.classes.Items`."""
    from ..classes import Items

    return bool(args) and isinstance(args[0], Items)


class Lifecycle:
    """The container's one instance of a ``@cls`` class."""

    def __init__(self, cls, encoded_parameters: str):
        from ..classes import EXIT, METHOD, marked, yields

        name = cls.user_cls.__qualname__
        if not encoded_parameters:
            raise RuntimeError(
                f"{name} is a @cls class but its container has no {PARAMETERS_VARIABLE}: its stub was made "
                f"by an SDK older than classes; call it again with this SDK"
            )
        try:
            self._args, self._kwargs = pickling.loads(base64.b64decode(encoded_parameters))
        except Exception as e:
            raise RuntimeError(
                f"the parameters of {name} cannot be unpickled in the container ({execute.describe(e)}): pass plain "
                f"data, or make the modules they come from available in the image or the code directory"
            ) from e
        self._cls = cls
        self._methods = marked(cls.user_cls, METHOD)
        # Whether inputs may stream items: the runner then serves the
        # container as a generator function's.
        self.yields = any(yields(marker.fn) for marker in self._methods.values())
        self._exits = marked(cls.user_cls, EXIT)
        self._instance = None
        self._exit_lock = threading.Lock()
        self._exited = False

    def enter(self) -> None:
        """Makes the instance and runs its @enter methods; EnterError if one fails."""
        self._instance = entered(self._cls, self._args, self._kwargs)

    def __call__(self, method: str, /, *args, **kwargs):
        marker = self._methods.get(method)
        if marker is None:
            raise ValueError(
                f"{self._cls.user_cls.__qualname__} has no @method {method!r} (its @methods: "
                f"{', '.join(self._methods) or 'none'}): mark it with @levers9.method"
            )
        from ..classes import check_call_kind

        # The caller's SDK checked this too, unless it called a looked-up class.
        check_call_kind(marker.fn, streams((method,)))
        return marker.fn(self._instance, *args, **kwargs)

    def exit(self) -> None:
        """Runs the @exit methods once (later calls wait for the first to
        end); each one's exception is logged and the next runs still."""
        with self._exit_lock:
            if self._exited or self._instance is None:
                return
            self._exited = True
            for marker in self._exits.values():
                try:
                    execute.settled(marker.fn(self._instance))
                except Exception as e:
                    sys.__stderr__.write(
                        f"levers9 runner: @exit method {marker.fn.__qualname__} failed:\n"
                        f"{execute.formatted(e, e.__traceback__)}"
                    )
                    sys.__stderr__.flush()
