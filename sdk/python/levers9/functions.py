"""``@function``: a plain Python function that can also run remotely.

This module must not import grpc or protobuf: the container's runner imports
the user's module, and with it this decorator, in images that have neither.
Everything that talks to the controlplane is imported on first remote use.
"""

from __future__ import annotations

import functools
import itertools
import threading
import types

from .aio import AioGeneratorMethod, AioMethod
from .callables import yields
from .resources import FunctionConfig, build_config
from .schedule import check_schedule

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import Dict, Optional, Tuple


class _RemoteCalls:
    """``remote``, ``map``, ``spawn`` and ``remote_gen`` over a stub that `_client_and_stub` names."""

    def __init__(self):
        self.remote = AioMethod(self._remote, "Runs the function remotely on one input and returns its value.")
        self.map = AioGeneratorMethod(self._map, _RemoteCalls._map.__doc__ or "")
        self.spawn = AioMethod(self._spawn, "Starts one remote call and returns a FunctionCall right away.")
        self.remote_gen = AioGeneratorMethod(self._remote_gen, _RemoteCalls._remote_gen.__doc__ or "")

    def _client_and_stub(self):
        raise NotImplementedError

    def _check_kind(self, generator_call: bool, method: str) -> None:
        """Refuses a call of the wrong kind when the function is known here
        (a looked-up function is checked by the controlplane instead)."""

    def _remote_gen(self, cancellation, /, *args, **kwargs):
        """Runs a generator function remotely on one input, yielding its items as it yields them.

        The generator runs at most a window of items (16, or 16 MiB) ahead of
        the items taken from this iterator. An exception it raises is raised
        here after the items before it.
        """
        self._check_kind(True, "remote_gen")
        from . import invoke

        payload = invoke.pickle_input(args, kwargs)
        return self._remote_gen_items(cancellation, payload)

    def _remote_gen_items(self, cancellation, payload):
        from .generator import run_generator

        client, stub_id = self._client_and_stub()
        yield from run_generator(client, stub_id, payload, cancellation)

    def _remote(self, cancellation, /, *args, **kwargs):
        from . import invoke

        self._check_kind(False, "remote")
        payload = invoke.pickle_input(args, kwargs)
        client, stub_id = self._client_and_stub()
        return invoke.run_one(client, stub_id, payload, cancellation)

    def _map(self, cancellation, iterable, /, *more_iterables, order_outputs=True, return_exceptions=False):
        """Runs the function on each item of the zipped iterables, over one stream.

        Yields values in input order (or as they finish, with
        ``order_outputs=False``). A failed input raises its exception, which
        cancels the rest, unless ``return_exceptions=True`` yields it instead.
        """
        self._check_kind(False, "map")
        iterables = (iterable,) + more_iterables
        for it in iterables:
            if not hasattr(it, "__iter__"):
                raise TypeError(f"map() takes iterables; got a {type(it).__name__}")
        return self._map_results(cancellation, iterables, order_outputs, return_exceptions)

    def _map_results(self, cancellation, iterables, order_outputs, return_exceptions):
        from . import invoke

        payloads = invoke.pickled_inputs(iterables)
        first = next(payloads, None)
        if first is None:
            return  # nothing to run, so no stub and no stream
        client, stub_id = self._client_and_stub()
        yield from invoke.run_many(
            client,
            stub_id,
            itertools.chain([first], payloads),
            order_outputs=order_outputs,
            return_exceptions=return_exceptions,
            cancellation=cancellation,
        )

    def _spawn(self, cancellation, /, *args, **kwargs):
        from . import invoke
        from .call import FunctionCall

        self._check_kind(False, "spawn")
        payload = invoke.pickle_input(args, kwargs)
        client, stub_id = self._client_and_stub()
        return FunctionCall(invoke.spawn(client, stub_id, payload))


class Function(_RemoteCalls):
    """A decorated function.

    - ``f(...)`` and ``f.local(...)`` run it here, as the plain function.
    - ``f.remote(...)`` runs it in a container and returns its value.
    - ``f.map(xs, ys, ...)`` runs it on every zipped item, yielding values.
    - ``f.spawn(...)`` starts it and returns a `FunctionCall` at once.
    - ``f.remote_gen(...)``, for a generator function, yields its items
      as it yields them remotely.

    ``remote``, ``map`` and ``spawn`` have async forms:
    ``await f.remote.aio(...)``, ``async for v in f.map.aio(...)``,
    ``await f.spawn.aio(...)``, ``async for v in f.remote_gen.aio(...)``.

    ``Function.lookup(app, name)`` finds a deployed function instead (see
    ``levers9 deploy``), callable the same way without its code.
    """

    def __init__(self, raw_f, config: FunctionConfig, schedule=None):
        functools.update_wrapper(self, raw_f)
        self.raw_f = raw_f
        self.config = config
        # A Cron or Period, used by a deploy only (it is not part of the stub).
        self.schedule = schedule
        # Stub ids by controlplane (address, token): a process may switch
        # targets (e.g. LEVERS9_TOKEN changed), and ids are per workspace.
        self._stub_ids: Dict[Tuple[str, str], str] = {}
        self._stub_lock = threading.Lock()
        super().__init__()

    @staticmethod
    def lookup(app_name: str, function_name: str) -> "_RemoteCalls":
        """The function `function_name` of the deployed app `app_name`, in the
        caller's workspace, at the app's current version.

        The returned object has ``remote``, ``map`` and ``spawn``; calling it
        needs neither the function's code nor its module. Raises
        `ControlplaneError` with code ``NOT_FOUND`` if the workspace has no
        such deployed function.
        """
        from .deployment import lookup

        return lookup(app_name, function_name)

    @property
    def is_generator(self) -> bool:
        """Whether the function yields (a generator or an async generator)."""
        return yields(self.raw_f)

    def _check_kind(self, generator_call: bool, method: str) -> None:
        name = self.raw_f.__qualname__
        if self.is_generator and not generator_call:
            raise TypeError(
                f"{name} is a generator function: iterate over {name}.remote_gen(...) (or async for over "
                f"{name}.remote_gen.aio(...)), which streams its items; .{method} takes a returned value"
            )
        if generator_call and not self.is_generator:
            raise TypeError(
                f"{name} is not a generator function: call it with {name}.remote(...); "
                f".remote_gen streams the items of a function that yields"
            )

    def local(self, *args, **kwargs):
        """Runs the plain function in this process."""
        return self.raw_f(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        return self.raw_f(*args, **kwargs)

    def __repr__(self):
        return f"<levers9.Function {self.raw_f.__module__}.{self.raw_f.__qualname__}>"

    def _client_and_stub(self):
        from .client import get_client
        from .stub import create_stub

        client = get_client()
        key = (client.target.address, client.target.token)
        # Held across the creation so concurrent first calls create the stub once.
        with self._stub_lock:
            stub_id = self._stub_ids.get(key)
            if stub_id is None:
                stub_id = self._stub_ids[key] = create_stub(client, self.raw_f, self.config)
        return client, stub_id


def function(
    _fn=None,
    *,
    cpu: float = 0.125,
    memory="128Mi",
    gpu=None,
    gpu_count: int = 1,
    image=None,
    retries: int = 0,
    timeout: int = 300,
    keep_warm_seconds: int = 60,
    concurrency: int = 1,
    env: Optional[dict] = None,
    secrets=None,
    pool: Optional[str] = None,
    max_containers: Optional[int] = None,
    min_containers: int = 0,
    volumes=None,
    schedule=None,
):
    """Makes a module-level function runnable remotely; usable as ``@function`` or ``@function(...)``.

    cpu: cores (0.125 = 125 millicores). memory: MiB as an int, or "512Mi",
    "2Gi". gpu: a type ("L40S") or types in order of preference, with
    gpu_count of them. image: an `Image` (default: the base Python image).
    retries: extra attempts for a failed input. timeout: seconds per input.
    keep_warm_seconds: how long an idle container waits for more inputs.
    concurrency: inputs one container runs at once (in threads). env,
    secrets: environment and secret names for the container; of the
    ``LEVERS9_*`` names only ``LEVERS9_SECURITY_PROFILE="hardened"`` and
    ``LEVERS9_SECCOMP="observe"|"enforce"`` are allowed, to ask for stricter
    containers than the pool's (never looser). pool: the worker pool. max_containers: at most this many containers at once.
    min_containers: while deployed (``levers9 deploy``), this many containers
    are kept running even with nothing to do, so calls do not wait for a cold
    start (0: scale to zero); ``.remote()`` alone, undeployed, keeps none.
    volumes: `Volume`s of the workspace to mount, e.g.
    ``[Volume("data", mount_path="/data")]``. schedule: ``Cron("*/5 * * * *")``
    or ``Period(minutes=5)``: once the file is deployed (``levers9 deploy``),
    the controlplane calls the function with no arguments at every tick
    (UTC); it does nothing for a function that is only called with
    ``.remote()``.
    """
    if _fn is not None and not callable(_fn):
        raise TypeError(f"@function takes keyword arguments only, e.g. @function(cpu=2); got {_fn!r}")
    config = build_config(
        cpu=cpu,
        memory=memory,
        gpu=gpu,
        gpu_count=gpu_count,
        image=image,
        retries=retries,
        timeout=timeout,
        keep_warm_seconds=keep_warm_seconds,
        concurrency=concurrency,
        env=env,
        secrets=secrets,
        pool=pool,
        max_containers=max_containers,
        min_containers=min_containers,
        volumes=volumes,
    )

    def decorate(fn):
        if isinstance(fn, Function):
            raise TypeError(f"{fn.raw_f.__qualname__} is already a levers9 function: decorate it once")
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"@function decorates functions defined with def or async def; got {type(fn).__name__}")
        if schedule is not None and yields(fn):
            raise ValueError(
                f"{fn.__qualname__} is a generator and has a schedule: a scheduled run has no caller to "
                f"take its items; return a value instead, or drop the schedule"
            )
        check_schedule(schedule, fn)
        return Function(fn, config, schedule)

    return decorate(_fn) if _fn is not None else decorate
