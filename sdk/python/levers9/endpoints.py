"""``@endpoint`` and ``@asgi``: a function, or the ASGI app a function
returns, served over HTTP once its file is deployed.

    from levers9 import endpoint

    @endpoint(name="greet", public=True)
    def greet(name: str = "world"):
        return {"greeting": f"hello {name}"}

After ``levers9 deploy app.py`` the controlplane's HTTP listener serves it at
``/endpoint/<workspace name>/greet``: ``POST`` a JSON object (its members are
the keyword arguments) or ``GET`` with query parameters (strings); the value
comes back as JSON. See docs/endpoints.md.

Like `levers9.functions`, this module must not import grpc or protobuf: the
runner imports the user's module, and with it this decorator.
"""

from __future__ import annotations

import inspect
import re
from typing import Optional

from .callables import yields
from .functions import Function, function

_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$")


class Endpoint(Function):
    """A function that a deploy also serves over HTTP as `endpoint_name`.

    It is a `Function` too: ``.remote()``, ``.map()`` and ``.local()`` work
    as for any other, with pickled arguments.
    """

    def __init__(self, raw_f, config, endpoint_name: str, public: bool, asgi: bool = False):
        super().__init__(raw_f, config)
        self.endpoint_name = endpoint_name
        self.public = public
        # The function returns an ASGI app, which answers whole requests.
        self.asgi = asgi

    def __repr__(self):
        return f"<levers9.Endpoint {self.endpoint_name} {self.raw_f.__module__}.{self.raw_f.__qualname__}>"


def endpoint(_fn=None, *, name: Optional[str] = None, public: bool = False, **resources):
    """Serves a module-level function over HTTP once deployed; usable as
    ``@endpoint`` or ``@endpoint(...)``.

    name: the last path segment, ``/endpoint/<workspace>/<name>`` (default:
    the function's name); 1 to 64 letters, digits, '-', '_' or '.', unique in
    the workspace. public: serve it without a token; otherwise requests need
    ``Authorization: Bearer <token of the workspace>``. Every other keyword
    is `levers9.function`'s (cpu, memory, image, timeout, concurrency,
    max_containers, min_containers, ...), except schedule. The function takes keyword
    arguments that JSON can carry and returns a value JSON can hold.
    """
    return _decorator(_fn, name, public, False, resources)


def asgi(_fn=None, *, name: Optional[str] = None, public: bool = False, **resources):
    """Serves the ASGI app the function returns (FastAPI, Starlette, or any
    ASGI 3 callable) once deployed; usable as ``@asgi`` or ``@asgi(...)``.

    Every request under ``/endpoint/<workspace>/<name>/`` goes to the app
    whole: method, path (under the endpoint's, from ``/``), query, headers
    and body; the app's status, headers and body come back. The function is
    called once per container, on its first request, and the app's lifespan
    startup runs then. A private endpoint's ``Authorization`` header (the
    workspace token) does not reach the app. The options are `endpoint`'s.
    A streamed answer (``StreamingResponse``, server-sent events) reaches
    the client chunk by chunk, and a websocket route is served as one task
    per connection (docs/endpoints.md#websockets).
    """
    return _decorator(_fn, name, public, True, resources)


def _decorator(_fn, name, public, is_asgi, resources):
    kind = "asgi" if is_asgi else "endpoint"
    if _fn is not None and not callable(_fn):
        raise TypeError(f"@{kind} takes keyword arguments only, e.g. @{kind}(name='greet'); got {_fn!r}")
    if "schedule" in resources:
        raise TypeError(f"@{kind} takes no schedule: an endpoint runs when it is requested")
    if not isinstance(public, bool):
        raise TypeError(f"public is True or False; got {public!r}")
    if name is not None and (not isinstance(name, str) or not _NAME.match(name)):
        raise ValueError(
            f"endpoint name {name!r} is not valid: use 1 to 64 letters, digits, '-', '_' or '.', "
            f"not starting with '.'"
        )
    # Checks the resources now, at decoration, as @function does.
    make = function(**resources)

    def decorate(fn):
        if yields(fn):
            what = "its ASGI app" if is_asgi else "one JSON value"
            raise TypeError(f"{fn.__qualname__} is a generator; an endpoint returns {what}")
        if is_asgi and inspect.iscoroutinefunction(fn):
            raise TypeError(f"{fn.__qualname__} is async; an @asgi function returns its app, so define it with def")
        made = make(fn)
        endpoint_name = name or fn.__name__
        if not _NAME.match(endpoint_name):
            raise ValueError(f"{fn.__name__} is not a valid endpoint name: give one with @{kind}(name=...)")
        if is_asgi:
            # The runner sees the plain function: this tells it to host its app.
            fn.__levers9_asgi__ = True
        return Endpoint(made.raw_f, made.config, endpoint_name, public, asgi=is_asgi)

    return decorate(_fn) if _fn is not None else decorate
