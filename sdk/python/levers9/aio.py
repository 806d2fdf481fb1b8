"""`.aio` forms: the blocking implementation run on a thread, awaitable from asyncio.

Each method object is callable (the blocking form) and has ``.aio`` (the
async form). The implementation takes a `Cancellation` first: if the
awaiting task is cancelled, its gRPC calls are cancelled too, so a cancelled
``await f.remote.aio()`` does not leave its input running remotely.
"""

from __future__ import annotations

import functools

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import Callable


def _cancellation():
    # Imported here: invoke needs grpc, and `levers9` must import without it.
    from .invoke import Cancellation

    return Cancellation()


async def _in_thread(work: Callable):
    # asyncio is imported here, where a loop runs already: importing it
    # with the package would slow every container's start for nothing.
    import asyncio

    loop = asyncio.get_running_loop()
    cancellation = _cancellation()
    future = loop.run_in_executor(None, work, cancellation)
    try:
        return await future
    except asyncio.CancelledError:
        cancellation.cancel()
        raise


class AioMethod:
    """A blocking method with an awaitable ``.aio`` twin."""

    def __init__(self, impl: Callable, doc: str = ""):
        # impl(cancellation_or_None, *args, **kwargs)
        self._impl = impl
        self.__doc__ = doc

    def __call__(self, *args, **kwargs):
        return self._impl(None, *args, **kwargs)

    async def aio(self, *args, **kwargs):
        return await _in_thread(lambda cancellation: self._impl(cancellation, *args, **kwargs))


class AioGeneratorMethod:
    """A method returning an iterator, with an async-iterator ``.aio`` twin."""

    def __init__(self, impl: Callable, doc: str = ""):
        self._impl = impl
        self.__doc__ = doc

    def __call__(self, *args, **kwargs):
        return self._impl(None, *args, **kwargs)

    async def aio(self, *args, **kwargs):
        import asyncio

        loop = asyncio.get_running_loop()
        cancellation = _cancellation()
        iterator = self._impl(cancellation, *args, **kwargs)
        end = object()
        try:
            while True:
                # One next() per hop to the thread pool: results reach the
                # event loop as soon as each arrives.
                item = await loop.run_in_executor(None, functools.partial(next, iterator, end))
                if item is end:
                    return
                yield item
        finally:
            # Stops the stream if the consumer left early; a no-op once done.
            cancellation.cancel()
