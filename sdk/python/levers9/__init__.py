"""levers9: run Python functions in containers on your own levers9 platform.

    from levers9 import function

    @function(cpu=1, memory="1Gi")
    def square(x):
        return x * x

    square.remote(3)               # 9, computed in a container
    list(square.map(range(10)))    # over one stream, in input order

Importing this package does not import grpc or protobuf (the runner inside
containers imports it without them); the client is loaded on first remote use.
"""

from .call import FunctionCall
from .cls import BoundMethod, Cls, Instance, cls, enter, exit, method
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
from .endpoint import Endpoint, asgi, endpoint
from .dict import Dict
from .function import Function, function
from .image import Image
from .queue import Queue
from .sandbox import Sandbox, SandboxFileError, SandboxProcess, SandboxTerminated
from .schedule import Cron, Period
from .secret import Secret
from .volume import FileEntry, Volume, VolumeFileNotFound, VolumeNotFound

__version__ = "0.1.0"

__all__ = [
    "AuthError",
    "BoundMethod",
    "Cls",
    "ConfigError",
    "ControlplaneError",
    "ControlplaneUnavailable",
    "Cron",
    "Dict",
    "Endpoint",
    "FileEntry",
    "Function",
    "FunctionCall",
    "Image",
    "Instance",
    "Levers9Error",
    "Period",
    "Queue",
    "RemoteError",
    "RemoteTraceback",
    "Sandbox",
    "SandboxFileError",
    "SandboxProcess",
    "SandboxTerminated",
    "Secret",
    "TaskCancelled",
    "TaskFailed",
    "TaskTimeout",
    "Volume",
    "VolumeFileNotFound",
    "VolumeNotFound",
    "asgi",
    "cls",
    "endpoint",
    "enter",
    "exit",
    "function",
    "method",
]
