from levers9.v1 import worker_pb2 as _worker_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ContainerState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTAINER_STATE_UNSPECIFIED: _ClassVar[ContainerState]
    CONTAINER_STATE_PENDING: _ClassVar[ContainerState]
    CONTAINER_STATE_SCHEDULED: _ClassVar[ContainerState]
    CONTAINER_STATE_RUNNING: _ClassVar[ContainerState]
    CONTAINER_STATE_EXITED: _ClassVar[ContainerState]
    CONTAINER_STATE_FAILED: _ClassVar[ContainerState]
    CONTAINER_STATE_LOST: _ClassVar[ContainerState]
CONTAINER_STATE_UNSPECIFIED: ContainerState
CONTAINER_STATE_PENDING: ContainerState
CONTAINER_STATE_SCHEDULED: ContainerState
CONTAINER_STATE_RUNNING: ContainerState
CONTAINER_STATE_EXITED: ContainerState
CONTAINER_STATE_FAILED: ContainerState
CONTAINER_STATE_LOST: ContainerState

class Container(_message.Message):
    __slots__ = ("container_id", "image", "pool", "worker_id", "state", "exit_code", "oom_killed", "message", "created_at", "args", "secrets", "gpu_type", "gpu_count")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    OOM_KILLED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    GPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    image: str
    pool: str
    worker_id: str
    state: ContainerState
    exit_code: int
    oom_killed: bool
    message: str
    created_at: str
    args: _containers.RepeatedScalarFieldContainer[str]
    secrets: _containers.RepeatedScalarFieldContainer[str]
    gpu_type: str
    gpu_count: int
    def __init__(self, container_id: _Optional[str] = ..., image: _Optional[str] = ..., pool: _Optional[str] = ..., worker_id: _Optional[str] = ..., state: _Optional[_Union[ContainerState, str]] = ..., exit_code: _Optional[int] = ..., oom_killed: bool = ..., message: _Optional[str] = ..., created_at: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., secrets: _Optional[_Iterable[str]] = ..., gpu_type: _Optional[str] = ..., gpu_count: _Optional[int] = ...) -> None: ...

class RunContainerRequest(_message.Message):
    __slots__ = ("image", "args", "env", "pool", "cpu_millicores", "memory_mib", "secrets", "gpu_types", "gpu_count")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    CPU_MILLICORES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPES_FIELD_NUMBER: _ClassVar[int]
    GPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    image: str
    args: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.ScalarMap[str, str]
    pool: str
    cpu_millicores: int
    memory_mib: int
    secrets: _containers.RepeatedScalarFieldContainer[str]
    gpu_types: _containers.RepeatedScalarFieldContainer[str]
    gpu_count: int
    def __init__(self, image: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., pool: _Optional[str] = ..., cpu_millicores: _Optional[int] = ..., memory_mib: _Optional[int] = ..., secrets: _Optional[_Iterable[str]] = ..., gpu_types: _Optional[_Iterable[str]] = ..., gpu_count: _Optional[int] = ...) -> None: ...

class RunContainerResponse(_message.Message):
    __slots__ = ("container",)
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    container: Container
    def __init__(self, container: _Optional[_Union[Container, _Mapping]] = ...) -> None: ...

class ListContainersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListContainersResponse(_message.Message):
    __slots__ = ("containers",)
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    containers: _containers.RepeatedCompositeFieldContainer[Container]
    def __init__(self, containers: _Optional[_Iterable[_Union[Container, _Mapping]]] = ...) -> None: ...

class GetContainerRequest(_message.Message):
    __slots__ = ("container_id",)
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    def __init__(self, container_id: _Optional[str] = ...) -> None: ...

class GetContainerResponse(_message.Message):
    __slots__ = ("container",)
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    container: Container
    def __init__(self, container: _Optional[_Union[Container, _Mapping]] = ...) -> None: ...

class StopContainerRequest(_message.Message):
    __slots__ = ("container_id",)
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    def __init__(self, container_id: _Optional[str] = ...) -> None: ...

class StopContainerResponse(_message.Message):
    __slots__ = ("container",)
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    container: Container
    def __init__(self, container: _Optional[_Union[Container, _Mapping]] = ...) -> None: ...

class StreamContainerLogsRequest(_message.Message):
    __slots__ = ("container_id", "follow")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    follow: bool
    def __init__(self, container_id: _Optional[str] = ..., follow: bool = ...) -> None: ...

class ContainerLogEvent(_message.Message):
    __slots__ = ("log", "exited")
    LOG_FIELD_NUMBER: _ClassVar[int]
    EXITED_FIELD_NUMBER: _ClassVar[int]
    log: _worker_pb2.LogChunk
    exited: Container
    def __init__(self, log: _Optional[_Union[_worker_pb2.LogChunk, _Mapping]] = ..., exited: _Optional[_Union[Container, _Mapping]] = ...) -> None: ...

class ExecRequest(_message.Message):
    __slots__ = ("start", "stdin", "stdin_close", "resize")
    START_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    STDIN_CLOSE_FIELD_NUMBER: _ClassVar[int]
    RESIZE_FIELD_NUMBER: _ClassVar[int]
    start: ExecStartRequest
    stdin: bytes
    stdin_close: bool
    resize: _worker_pb2.TerminalSize
    def __init__(self, start: _Optional[_Union[ExecStartRequest, _Mapping]] = ..., stdin: _Optional[bytes] = ..., stdin_close: bool = ..., resize: _Optional[_Union[_worker_pb2.TerminalSize, _Mapping]] = ...) -> None: ...

class ExecStartRequest(_message.Message):
    __slots__ = ("container_id", "args", "env", "working_dir", "tty", "terminal_size")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIR_FIELD_NUMBER: _ClassVar[int]
    TTY_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    args: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.ScalarMap[str, str]
    working_dir: str
    tty: bool
    terminal_size: _worker_pb2.TerminalSize
    def __init__(self, container_id: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., working_dir: _Optional[str] = ..., tty: bool = ..., terminal_size: _Optional[_Union[_worker_pb2.TerminalSize, _Mapping]] = ...) -> None: ...

class ExecEvent(_message.Message):
    __slots__ = ("stdout", "stderr", "exit_code")
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    stdout: bytes
    stderr: bytes
    exit_code: int
    def __init__(self, stdout: _Optional[bytes] = ..., stderr: _Optional[bytes] = ..., exit_code: _Optional[int] = ...) -> None: ...
