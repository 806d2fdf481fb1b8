"""levers9: run Python functions in containers on your own levers9 platform.

    from levers9 import function

    @function(cpu=1, memory="1Gi")
    def square(x):
        return x * x

    square.remote(3)               # 9, computed in a container
    list(square.map(range(10)))    # over one stream, in input order

Importing this package does not import grpc or protobuf (the runner inside
containers imports it without them); the client is loaded on first remote use.
Nor does it import its modules: each name below is loaded on first use, so a
container's runner, which compiles the SDK each time it starts, reads only the
modules its function needs.
"""

from importlib import import_module

# Not typing's: importing typing costs a container's cold start ~3 ms, and
# the SDK's modules use its names in annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .call import FunctionCall
    from .classes import BoundMethod, Cls, Instance, cls, enter, exit, method
    from .dict import Dict
    from .endpoints import Endpoint, asgi, endpoint
    from .errors import (
        AuthError,
        ConfigError,
        ControlplaneError,
        ControlplaneUnavailable,
        Levers9Error,
        RemoteError,
        RemoteTraceback,
        TaskCancelled,
        TaskFailed,
        TaskTimeout,
    )
    from .functions import Function, function
    from .image import Image
    from .queue import Queue
    from .sandbox import Sandbox, SandboxFileError, SandboxProcess, SandboxTerminated
    from .schedule import Cron, Period
    from .secret import Secret
    from .volume import FileEntry, Volume, VolumeFileNotFound, VolumeNotFound

__version__ = "0.1.0"

# Which module defines each public name.
_HOME = {
    "FunctionCall": "call",
    "BoundMethod": "classes",
    "Cls": "classes",
    "Instance": "classes",
    "cls": "classes",
    "enter": "classes",
    "exit": "classes",
    "method": "classes",
    "Dict": "dict",
    "Endpoint": "endpoints",
    "asgi": "endpoints",
    "endpoint": "endpoints",
    "AuthError": "errors",
    "ConfigError": "errors",
    "ControlplaneError": "errors",
    "ControlplaneUnavailable": "errors",
    "Levers9Error": "errors",
    "RemoteError": "errors",
    "RemoteTraceback": "errors",
    "TaskCancelled": "errors",
    "TaskFailed": "errors",
    "TaskTimeout": "errors",
    "Function": "functions",
    "function": "functions",
    "Image": "image",
    "Queue": "queue",
    "Sandbox": "sandbox",
    "SandboxFileError": "sandbox",
    "SandboxProcess": "sandbox",
    "SandboxTerminated": "sandbox",
    "Cron": "schedule",
    "Period": "schedule",
    "Secret": "secret",
    "FileEntry": "volume",
    "Volume": "volume",
    "VolumeFileNotFound": "volume",
    "VolumeNotFound": "volume",
}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'levers9' has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
