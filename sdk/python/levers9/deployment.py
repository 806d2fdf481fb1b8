"""Deployed apps: ``levers9 deploy`` stores a file's functions under an app
name, and ``Function.lookup(app, name)`` calls them from anywhere with a
token of the same workspace, without the code.

A deploy makes the stub of every ``@function`` in the file, exactly as a first
``.remote()`` would (same upload, same stub ids), and of every ``@cls``
class's instance of its default parameters (``Cls.lookup(app, name)``), then names them all in one
Deploy call: the app's next version, which replaces the previous one's
functions at once, and its schedules (a function's ``schedule=``) and web
endpoints (``@endpoint``) with them.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from .client import Client, get_client
from .classes import Cls, MethodCalls
from .endpoints import Endpoint
from .functions import Function, _RemoteCalls
from .schedule import to_proto as schedule_proto
from .v1 import function_pb2 as pb


class DeployedFunction(_RemoteCalls):
    """A function of a deployed app, at the version current when it was looked up."""

    def __init__(self, client: Client, app_name: str, function_name: str, stub_id: str, version: int):
        self.app_name = app_name
        self.function_name = function_name
        self.stub_id = stub_id
        self.version = version
        self._client = client
        super().__init__()

    def __repr__(self):
        return f"<levers9.DeployedFunction {self.app_name}.{self.function_name} v{self.version}>"

    def _client_and_stub(self):
        return self._client, self.stub_id


class DeployedMethod(MethodCalls):
    """A method of a deployed class (checked by its container, which has the code)."""

    def __init__(self, deployed: "DeployedClass", name: str):
        self._deployed = deployed
        super().__init__(name)

    def __repr__(self):
        return f"<levers9.DeployedMethod {self._deployed.class_name}.{self._name} of {self._deployed.app_name}>"

    def _client_and_stub(self):
        return self._deployed._client, self._deployed.stub_id


class DeployedClass:
    """A ``@cls`` class of a deployed app, at the version current when it was
    looked up: its instance of the default parameters, the one deployed.
    ``Model.predict.remote(...)`` (or ``Model().predict…``, as Modal writes it)."""

    def __init__(self, client: Client, app_name: str, class_name: str, stub_id: str, version: int):
        self.app_name = app_name
        self.class_name = class_name
        self.stub_id = stub_id
        self.version = version
        self._client = client

    def __call__(self, *args, **kwargs) -> "DeployedClass":
        if args or kwargs:
            raise TypeError(
                f"{self.class_name} of {self.app_name} is deployed with its default parameters only: call "
                f"{self.class_name}().method.remote(...), or call the class from code that has it to pass others"
            )
        return self

    def __getattr__(self, name: str) -> DeployedMethod:
        if name.startswith("_"):
            raise AttributeError(name)
        return DeployedMethod(self, name)

    def __repr__(self):
        return f"<levers9.DeployedClass {self.app_name}.{self.class_name} v{self.version}>"


def _deployment(client: Client, app_name: str, name: str):
    return client.call("GetDeployment", pb.GetDeploymentRequest(app_name=app_name, function_name=name)).deployment


def lookup(app_name: str, function_name: str) -> DeployedFunction:
    client = get_client()
    deployment = _deployment(client, app_name, function_name)
    return DeployedFunction(client, app_name, function_name, deployment.stub_id, deployment.version)


def lookup_class(app_name: str, class_name: str) -> DeployedClass:
    client = get_client()
    deployment = _deployment(client, app_name, class_name)
    return DeployedClass(client, app_name, class_name, deployment.stub_id, deployment.version)


def functions_of(module) -> Dict[str, object]:
    """The module's levers9 functions and classes by name, those it defines
    (not those it imports)."""
    return {
        name: value
        for name, value in sorted(vars(module).items())
        if (isinstance(value, Function) and value.raw_f.__module__ == module.__name__)
        or (isinstance(value, Cls) and value.user_cls.__module__ == module.__name__)
    }


def _deployed_instance(name: str, value: Cls):
    """A class deploys as its instance of the default parameters."""
    try:
        return value()
    except TypeError as e:
        from .errors import Levers9Error

        raise Levers9Error(
            f"{name} cannot be deployed: {e}; a deployed class runs with its default parameters, so give "
            f"every parameter of its __init__ a default"
        ) from None


def deploy(module, app_name: Optional[str] = None) -> Tuple[str, int, List[Tuple[str, str]]]:
    """Deploys the module's functions as the app `app_name` (default: the
    module's file stem); returns (app, version, [(function, stub id)])."""
    app = app_name or os.path.splitext(os.path.basename(module.__file__))[0]
    found = functions_of(module)
    if not found:
        from .errors import Levers9Error

        raise Levers9Error(
            f"{os.path.basename(module.__file__)} defines no levers9 function: decorate one with @levers9.function"
        )
    functions = []
    deployed = []
    client = None
    for name, fn in found.items():
        if isinstance(fn, Cls):
            client, stub_id = _deployed_instance(name, fn)._client_and_stub()
            functions.append((name, stub_id))
            deployed.append(pb.DeployedFunction(function_name=name, stub_id=stub_id))
            continue
        client, stub_id = fn._client_and_stub()
        functions.append((name, stub_id))
        entry = pb.DeployedFunction(function_name=name, stub_id=stub_id)
        if fn.schedule is not None:
            entry.schedule.CopyFrom(schedule_proto(fn.schedule, pb))
        if isinstance(fn, Endpoint):
            entry.endpoint.CopyFrom(pb.EndpointSpec(name=fn.endpoint_name, public=fn.public, asgi=fn.asgi))
        deployed.append(entry)
    response = client.call("Deploy", pb.DeployRequest(app_name=app, functions=deployed))
    return app, response.version, functions
