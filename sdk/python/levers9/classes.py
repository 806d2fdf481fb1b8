"""``@cls``: a class whose instances run in containers, with a lifecycle.

    @cls(cpu=1, keep_warm_seconds=120)
    class Model:
        def __init__(self, size="small"):
            self.size = size

        @enter
        def load(self):          # once per container, before its first input
            self.weights = ...

        @method
        def predict(self, x):    # Model(size="large").predict.remote(3)
            ...

        @exit
        def close(self):         # when the container stops
            ...

An instance's parameters are the arguments of ``Model(...)``, bound to
``__init__`` with its defaults filled in, so ``Model()`` and
``Model(size="small")`` are the same instance. They are part of its stub:
equal parameters share one stub and its warm containers, different ones get
their own. Every ``@method`` of an instance runs in those containers, so
``@enter`` runs once per container whichever methods are called.

An input of a class's stub is ``((method name, *args), kwargs)``: the
runner calls the named ``@method`` of the container's instance with the
rest (see ``runner.lifecycle``). A ``.remote_gen`` call names its method as
`Items`, so the container streams the method's items; a method that yields
is called only so, and one that returns only otherwise.

Like `function`, this module imports neither grpc nor protobuf: the runner
imports it with the user's module.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import threading
from typing import Dict, Optional, Tuple

from .callables import yields
from .functions import _RemoteCalls
from .resources import FunctionConfig, build_config

ENTER = "enter"
EXIT = "exit"
METHOD = "method"
_CALL_FORMS = ("remote", "map", "spawn", "remote_gen", "local")


class Items(str):
    """The name of a ``@method`` in the input of a ``.remote_gen`` call: the
    container streams what the method yields (a plain name asks for its
    returned value)."""


def check_call_kind(fn, generator_call: bool) -> None:
    """Refuses a ``.remote_gen`` of a method that returns, and the other
    calls of one that yields, saying which to use."""
    name = fn.__qualname__
    if yields(fn) and not generator_call:
        raise TypeError(
            f"{name} is a generator method: iterate over .remote_gen(...) (or async for over "
            f".remote_gen.aio(...)), which streams its items; .remote, .map and .spawn take a returned value"
        )
    if generator_call and not yields(fn):
        raise TypeError(f"{name} is not a generator: call it with .remote(...), which returns its value")


class _Marked:
    """A function of a class marked ``@enter``, ``@exit`` or ``@method``.

    On an instance of the class it is a plain bound method (the container
    calls it so); its remote forms say that the class needs ``@cls``.
    """

    def __init__(self, fn, role: str):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.role = role

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        import types

        return types.MethodType(self, obj)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __getattr__(self, name):
        if name in _CALL_FORMS:
            owner = self.fn.__qualname__.rpartition(".")[0] or "its class"
            raise TypeError(
                f"{self.fn.__qualname__} is a @{self.role} of {owner}, which is not decorated with "
                f"@levers9.cls: put @cls(...) above class {owner}, then call "
                f"{owner}(...).{self.fn.__name__}.{name}(...)"
            )
        raise AttributeError(name)


def _mark(role: str):
    """The decorator for `role`, usable bare (``@enter``) or called (``@enter()``, as Modal writes it)."""

    def decorator(fn=None):
        return decorate if fn is None else decorate(fn)

    def decorate(fn):
        if isinstance(fn, _Marked):
            raise TypeError(f"{fn.fn.__qualname__} is already marked @{fn.role}: a function has one role")
        if not inspect.isfunction(fn):
            raise TypeError(f"@{role} decorates a method defined with def or async def in a class; got {fn!r}")
        if role != METHOD and yields(fn):
            raise TypeError(f"@{role} method {fn.__qualname__} yields: @{role} methods return nothing")
        return _Marked(fn, role)

    return decorator


enter = _mark(ENTER)
enter.__doc__ = "Marks a method of a ``@cls`` class that runs once per container, before its first input."
exit = _mark(EXIT)  # noqa: A001 (levers9.exit, as Modal users write it)
exit.__doc__ = "Marks a method of a ``@cls`` class that runs when its container stops."
method = _mark(METHOD)
method.__doc__ = "Marks a method of a ``@cls`` class as callable remotely: ``Model().predict.remote(...)``."


def marked(user_cls, role: str) -> Dict[str, _Marked]:
    """The methods of `user_cls` (and its bases) marked `role`, by name, in
    definition order, bases first."""
    found: Dict[str, _Marked] = {}
    for klass in reversed(user_cls.__mro__):
        for name, value in vars(klass).items():
            # An override replaces the base's method, marked or not.
            found.pop(name, None)
            if isinstance(value, _Marked):
                found[name] = value
    return {name: value for name, value in found.items() if value.role == role}


class Cls:
    """A ``@cls`` class: call it with its parameters to get an `Instance`."""

    def __init__(self, user_cls, config: FunctionConfig):
        self.__dict__["user_cls"] = user_cls
        self.config = config
        self.methods = marked(user_cls, METHOD)
        self.__name__ = user_cls.__name__
        self.__qualname__ = user_cls.__qualname__
        self.__module__ = user_cls.__module__
        self.__doc__ = user_cls.__doc__
        # Stub ids by (controlplane address, token, parameters).
        self._stub_ids: Dict[Tuple[str, str, bytes], str] = {}
        self._stub_lock = threading.Lock()
        self._signature = _init_signature(user_cls)

    def __call__(self, *args, **kwargs) -> "Instance":
        name = self.user_cls.__qualname__
        if self._signature is None:
            if args or kwargs:
                raise TypeError(f"{name} has no __init__, so it takes no parameters: define __init__ to take some")
            bound_args, bound_kwargs = (), {}
        else:
            try:
                bound = self._signature.bind(None, *args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{name}(...): {e}") from None
            bound.apply_defaults()
            bound_args, bound_kwargs = bound.args[1:], bound.kwargs
        return Instance(self, bound_args, bound_kwargs)

    @staticmethod
    def lookup(app_name: str, class_name: str):
        """The class `class_name` of the deployed app `app_name` (see ``levers9
        deploy``), callable without its code: ``Cls.lookup("app",
        "Model").predict.remote(3)``. A deployed class runs with the
        parameters it was deployed with, its ``__init__`` defaults."""
        from .deployment import lookup_class

        return lookup_class(app_name, class_name)

    def __getattr__(self, name):
        # Only for names the Cls itself does not have.
        user_cls = self.__dict__["user_cls"]
        cls_name = user_cls.__qualname__
        if name in self.__dict__.get("methods", {}):
            raise TypeError(
                f"{cls_name}.{name} belongs to an instance: call {cls_name}().{name}.remote(...), "
                f"with {cls_name}'s parameters in the first parentheses"
            )
        if name in _CALL_FORMS:
            example = next(iter(self.__dict__.get("methods", {})), "method")
            raise TypeError(
                f"{cls_name} is a class: call a @method of an instance, e.g. {cls_name}().{example}.remote(...)"
            )
        return getattr(user_cls, name)

    def __repr__(self):
        return f"<levers9.Cls {self.user_cls.__module__}.{self.user_cls.__qualname__}>"


def _init_signature(user_cls) -> Optional[inspect.Signature]:
    if user_cls.__init__ is object.__init__:
        return None
    return inspect.signature(user_cls.__init__)


class Instance:
    """An instance of a ``@cls`` class with its parameters: its ``@method``s
    run remotely in the containers of its stub. ``Model(...).predict.local(...)``
    runs here instead, on one local instance (entered on first use)."""

    def __init__(self, cls: Cls, args: tuple, kwargs: dict):
        self._cls = cls
        self._args = args
        self._kwargs = kwargs
        self.parameters = _pickle_parameters(cls.user_cls.__qualname__, args, kwargs)
        self._methods: Dict[str, BoundMethod] = {}
        self._local = None
        self._local_lock = threading.Lock()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        cls = self._cls
        cls_name = cls.user_cls.__qualname__
        if name in cls.methods:
            bound = self._methods.get(name)
            if bound is None:
                bound = self._methods.setdefault(name, BoundMethod(self, name))
            return bound
        value = inspect.getattr_static(cls.user_cls, name, None)
        if isinstance(value, _Marked):
            raise TypeError(f"{cls_name}.{name} is @{value.role}: the container runs it; only @methods are called")
        if inspect.isfunction(value):
            raise TypeError(
                f"{cls_name}.{name} is not a @method: decorate it with @levers9.method to call it remotely"
            )
        raise AttributeError(f"{cls_name} has no @method {name!r} (its @methods: {', '.join(cls.methods) or 'none'})")

    def __repr__(self):
        parameters = [repr(a) for a in self._args] + [f"{k}={v!r}" for k, v in self._kwargs.items()]
        return f"<levers9.Instance {self._cls.user_cls.__qualname__}({', '.join(parameters)})>"

    def _local_instance(self):
        with self._local_lock:
            if self._local is None:
                from .runner.lifecycle import entered

                self._local = entered(self._cls, self._args, self._kwargs)
            return self._local

    def _client_and_stub(self):
        from .client import get_client
        from .stub import create_stub

        client = get_client()
        cls = self._cls
        key = (client.target.address, client.target.token, self.parameters)
        with cls._stub_lock:
            stub_id = cls._stub_ids.get(key)
            if stub_id is None:
                stub_id = cls._stub_ids[key] = create_stub(
                    client, cls.user_cls, cls.config, class_parameters=self.parameters
                )
        return client, stub_id


def _pickle_parameters(name: str, args: tuple, kwargs: dict) -> bytes:
    import cloudpickle

    try:
        return cloudpickle.dumps((tuple(args), dict(kwargs)))
    except Exception as e:  # pickling raises anything the objects' __reduce__ does
        raise TypeError(
            f"the parameters of {name}(...) cannot be pickled ({type(e).__name__}: {e}); pass plain data "
            f"(strings, numbers, lists, dicts), and load anything bigger in an @enter method"
        ) from e


class MethodCalls(_RemoteCalls):
    """``remote``, ``map``, ``spawn`` and ``remote_gen`` of the ``@method``
    `name` of a class's stub: each input names the method first (see the
    module's doc)."""

    def __init__(self, name: str):
        self._name = name
        super().__init__()

    def _remote(self, cancellation, /, *args, **kwargs):
        return super()._remote(cancellation, self._name, *args, **kwargs)

    def _spawn(self, cancellation, /, *args, **kwargs):
        return super()._spawn(cancellation, self._name, *args, **kwargs)

    def _remote_gen(self, cancellation, /, *args, **kwargs):
        return super()._remote_gen(cancellation, Items(self._name), *args, **kwargs)

    def _map_results(self, cancellation, iterables, order_outputs, return_exceptions):
        return super()._map_results(
            cancellation, (itertools.repeat(self._name),) + tuple(iterables), order_outputs, return_exceptions
        )


class BoundMethod(MethodCalls):
    """A ``@method`` of an `Instance`: ``remote``, ``map``, ``spawn`` (or
    ``remote_gen`` for one that yields; each with ``.aio``) run it in the
    instance's containers; ``local`` runs it here."""

    def __init__(self, instance: Instance, name: str):
        self._instance = instance
        self._marked = instance._cls.methods[name]
        super().__init__(name)

    def __repr__(self):
        return f"<levers9.BoundMethod {self._marked.fn.__qualname__} of {self._instance!r}>"

    def _client_and_stub(self):
        return self._instance._client_and_stub()

    def _check_kind(self, generator_call: bool, method: str) -> None:
        check_call_kind(self._marked.fn, generator_call)

    def local(self, *args, **kwargs):
        """Runs the method here, on a local instance made and entered once."""
        from .runner.execute import settled

        return settled(getattr(self._instance._local_instance(), self._name)(*args, **kwargs))


def cls(
    _cls=None,
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
):
    """Makes a module-level class runnable remotely, with a lifecycle; usable as
    ``@cls`` or ``@cls(...)``. Takes the arguments of ``@function`` (but
    ``schedule``), which apply to each of its instances' containers.

    ``Model(...)`` binds the parameters of ``__init__`` (they must pickle);
    ``Model(...).m.remote(...)``, ``.map``, ``.spawn`` (and their ``.aio``)
    call the ``@method`` m. In each container the class is instantiated
    once with those parameters, its ``@enter`` methods run once before the
    first input, and its ``@exit`` methods when the container stops (idle
    past ``keep_warm_seconds``, scaled down, or told to stop).
    """
    if _cls is not None and not inspect.isclass(_cls):
        raise TypeError(f"@cls decorates a class and takes keyword arguments only, e.g. @cls(cpu=2); got {_cls!r}")
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

    def decorate(user_cls):
        if isinstance(user_cls, Cls):
            raise TypeError(f"{user_cls.user_cls.__qualname__} is already a levers9 class: decorate it once")
        if not inspect.isclass(user_cls):
            raise TypeError(f"@cls decorates classes; got {type(user_cls).__name__}")
        if not marked(user_cls, METHOD):
            raise TypeError(
                f"{user_cls.__qualname__} has no @method: mark the methods to call remotely with @levers9.method"
            )
        return Cls(user_cls, config)

    return decorate(_cls) if _cls is not None else decorate

