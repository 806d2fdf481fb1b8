"""What kind of callable a user's function is, told without `inspect`.

The runner asks on every cold start (does the function stream items?),
and importing `inspect` costs a container's start ~7 ms of CPU: its own
tests read the code object's flags, as `inspect` does.
"""

from __future__ import annotations

import functools
import types

# The code flags of a function whose body yields (CPython's co_flags; the
# values `inspect.CO_GENERATOR` and `inspect.CO_ASYNC_GENERATOR` name).
_GENERATOR = 0x20
_ASYNC_GENERATOR = 0x200


def yields(fn) -> bool:
    """Whether calling `fn` makes a generator or an async generator (through
    bound methods and `functools.partial`, as `inspect.isgeneratorfunction`)."""
    while True:
        if isinstance(fn, types.MethodType):
            fn = fn.__func__
        elif isinstance(fn, functools.partial):
            fn = fn.func
        else:
            break
    return isinstance(fn, types.FunctionType) and bool(fn.__code__.co_flags & (_GENERATOR | _ASYNC_GENERATOR))
