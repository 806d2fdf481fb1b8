from levers9.v1 import volume_pb2 as _volume_pb2
from levers9.v1 import workspace_pb2 as _workspace_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TaskResultState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_RESULT_STATE_UNSPECIFIED: _ClassVar[TaskResultState]
    TASK_RESULT_STATE_COMPLETE: _ClassVar[TaskResultState]
    TASK_RESULT_STATE_ERROR: _ClassVar[TaskResultState]
    TASK_RESULT_STATE_TIMEOUT: _ClassVar[TaskResultState]
    TASK_RESULT_STATE_LOST: _ClassVar[TaskResultState]
    TASK_RESULT_STATE_CANCELLED: _ClassVar[TaskResultState]

class ContainerEventState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTAINER_EVENT_STATE_UNSPECIFIED: _ClassVar[ContainerEventState]
    CONTAINER_EVENT_STATE_RUNNING: _ClassVar[ContainerEventState]
    CONTAINER_EVENT_STATE_EXITED: _ClassVar[ContainerEventState]
    CONTAINER_EVENT_STATE_FAILED: _ClassVar[ContainerEventState]

class WorkerStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKER_STATUS_UNSPECIFIED: _ClassVar[WorkerStatus]
    WORKER_STATUS_READY: _ClassVar[WorkerStatus]
    WORKER_STATUS_LOST: _ClassVar[WorkerStatus]
TASK_RESULT_STATE_UNSPECIFIED: TaskResultState
TASK_RESULT_STATE_COMPLETE: TaskResultState
TASK_RESULT_STATE_ERROR: TaskResultState
TASK_RESULT_STATE_TIMEOUT: TaskResultState
TASK_RESULT_STATE_LOST: TaskResultState
TASK_RESULT_STATE_CANCELLED: TaskResultState
CONTAINER_EVENT_STATE_UNSPECIFIED: ContainerEventState
CONTAINER_EVENT_STATE_RUNNING: ContainerEventState
CONTAINER_EVENT_STATE_EXITED: ContainerEventState
CONTAINER_EVENT_STATE_FAILED: ContainerEventState
WORKER_STATUS_UNSPECIFIED: WorkerStatus
WORKER_STATUS_READY: WorkerStatus
WORKER_STATUS_LOST: WorkerStatus

class Gpu(_message.Message):
    __slots__ = ("gpu_type", "device_ids", "count")
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_IDS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    gpu_type: str
    device_ids: _containers.RepeatedScalarFieldContainer[str]
    count: int
    def __init__(self, gpu_type: _Optional[str] = ..., device_ids: _Optional[_Iterable[str]] = ..., count: _Optional[int] = ...) -> None: ...

class Capacity(_message.Message):
    __slots__ = ("cpu_millicores", "memory_mib", "gpus")
    CPU_MILLICORES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    cpu_millicores: int
    memory_mib: int
    gpus: _containers.RepeatedCompositeFieldContainer[Gpu]
    def __init__(self, cpu_millicores: _Optional[int] = ..., memory_mib: _Optional[int] = ..., gpus: _Optional[_Iterable[_Union[Gpu, _Mapping]]] = ...) -> None: ...

class WorkerMessage(_message.Message):
    __slots__ = ("register", "heartbeat", "ack", "event", "log", "runner_ready", "task_output", "task_result", "exec_output", "task_item")
    REGISTER_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    RUNNER_READY_FIELD_NUMBER: _ClassVar[int]
    TASK_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    TASK_RESULT_FIELD_NUMBER: _ClassVar[int]
    EXEC_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    TASK_ITEM_FIELD_NUMBER: _ClassVar[int]
    register: Register
    heartbeat: Heartbeat
    ack: Ack
    event: ContainerEvent
    log: LogChunk
    runner_ready: RunnerReady
    task_output: TaskOutput
    task_result: TaskResult
    exec_output: ExecOutput
    task_item: TaskItem
    def __init__(self, register: _Optional[_Union[Register, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., ack: _Optional[_Union[Ack, _Mapping]] = ..., event: _Optional[_Union[ContainerEvent, _Mapping]] = ..., log: _Optional[_Union[LogChunk, _Mapping]] = ..., runner_ready: _Optional[_Union[RunnerReady, _Mapping]] = ..., task_output: _Optional[_Union[TaskOutput, _Mapping]] = ..., task_result: _Optional[_Union[TaskResult, _Mapping]] = ..., exec_output: _Optional[_Union[ExecOutput, _Mapping]] = ..., task_item: _Optional[_Union[TaskItem, _Mapping]] = ...) -> None: ...

class TaskItem(_message.Message):
    __slots__ = ("container_id", "task_id", "item_index", "payload")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_INDEX_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    task_id: str
    item_index: int
    payload: bytes
    def __init__(self, container_id: _Optional[str] = ..., task_id: _Optional[str] = ..., item_index: _Optional[int] = ..., payload: _Optional[bytes] = ...) -> None: ...

class RunnerReady(_message.Message):
    __slots__ = ("container_id",)
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    def __init__(self, container_id: _Optional[str] = ...) -> None: ...

class TaskOutput(_message.Message):
    __slots__ = ("container_id", "task_id", "stream", "data")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    task_id: str
    stream: str
    data: bytes
    def __init__(self, container_id: _Optional[str] = ..., task_id: _Optional[str] = ..., stream: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class TaskResult(_message.Message):
    __slots__ = ("container_id", "task_id", "state", "payload", "traceback", "message")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    TRACEBACK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    task_id: str
    state: TaskResultState
    payload: bytes
    traceback: str
    message: str
    def __init__(self, container_id: _Optional[str] = ..., task_id: _Optional[str] = ..., state: _Optional[_Union[TaskResultState, str]] = ..., payload: _Optional[bytes] = ..., traceback: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class Register(_message.Message):
    __slots__ = ("worker_id", "pool", "hostname", "capacity", "runtime", "running")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    pool: str
    hostname: str
    capacity: Capacity
    runtime: str
    running: _containers.RepeatedCompositeFieldContainer[RunningContainer]
    def __init__(self, worker_id: _Optional[str] = ..., pool: _Optional[str] = ..., hostname: _Optional[str] = ..., capacity: _Optional[_Union[Capacity, _Mapping]] = ..., runtime: _Optional[str] = ..., running: _Optional[_Iterable[_Union[RunningContainer, _Mapping]]] = ...) -> None: ...

class RunningContainer(_message.Message):
    __slots__ = ("container_id", "cpu_millicores", "memory_mib", "gpu_type", "gpu_count")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    CPU_MILLICORES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    GPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    cpu_millicores: int
    memory_mib: int
    gpu_type: str
    gpu_count: int
    def __init__(self, container_id: _Optional[str] = ..., cpu_millicores: _Optional[int] = ..., memory_mib: _Optional[int] = ..., gpu_type: _Optional[str] = ..., gpu_count: _Optional[int] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Ack(_message.Message):
    __slots__ = ("request_id",)
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    def __init__(self, request_id: _Optional[str] = ...) -> None: ...

class ContainerEvent(_message.Message):
    __slots__ = ("container_id", "state", "exit_code", "oom_killed", "message")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    OOM_KILLED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    state: ContainerEventState
    exit_code: int
    oom_killed: bool
    message: str
    def __init__(self, container_id: _Optional[str] = ..., state: _Optional[_Union[ContainerEventState, str]] = ..., exit_code: _Optional[int] = ..., oom_killed: bool = ..., message: _Optional[str] = ...) -> None: ...

class LogChunk(_message.Message):
    __slots__ = ("container_id", "stream", "data", "seq")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    stream: str
    data: bytes
    seq: int
    def __init__(self, container_id: _Optional[str] = ..., stream: _Optional[str] = ..., data: _Optional[bytes] = ..., seq: _Optional[int] = ...) -> None: ...

class ControlplaneMessage(_message.Message):
    __slots__ = ("registered", "run", "stop", "task_input", "cancel_input", "exec_input", "items_ack")
    REGISTERED_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    TASK_INPUT_FIELD_NUMBER: _ClassVar[int]
    CANCEL_INPUT_FIELD_NUMBER: _ClassVar[int]
    EXEC_INPUT_FIELD_NUMBER: _ClassVar[int]
    ITEMS_ACK_FIELD_NUMBER: _ClassVar[int]
    registered: Registered
    run: RunContainer
    stop: StopContainer
    task_input: TaskInput
    cancel_input: CancelInput
    exec_input: ExecInput
    items_ack: ItemsAck
    def __init__(self, registered: _Optional[_Union[Registered, _Mapping]] = ..., run: _Optional[_Union[RunContainer, _Mapping]] = ..., stop: _Optional[_Union[StopContainer, _Mapping]] = ..., task_input: _Optional[_Union[TaskInput, _Mapping]] = ..., cancel_input: _Optional[_Union[CancelInput, _Mapping]] = ..., exec_input: _Optional[_Union[ExecInput, _Mapping]] = ..., items_ack: _Optional[_Union[ItemsAck, _Mapping]] = ...) -> None: ...

class ItemsAck(_message.Message):
    __slots__ = ("container_id", "task_id", "received")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    task_id: str
    received: int
    def __init__(self, container_id: _Optional[str] = ..., task_id: _Optional[str] = ..., received: _Optional[int] = ...) -> None: ...

class CancelInput(_message.Message):
    __slots__ = ("container_id", "task_id")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    task_id: str
    def __init__(self, container_id: _Optional[str] = ..., task_id: _Optional[str] = ...) -> None: ...

class TaskInput(_message.Message):
    __slots__ = ("container_id", "task_id", "payload", "timeout_ms", "attempt")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    task_id: str
    payload: bytes
    timeout_ms: int
    attempt: int
    def __init__(self, container_id: _Optional[str] = ..., task_id: _Optional[str] = ..., payload: _Optional[bytes] = ..., timeout_ms: _Optional[int] = ..., attempt: _Optional[int] = ...) -> None: ...

class ObjectMount(_message.Message):
    __slots__ = ("digest", "target", "unpack", "compile")
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    UNPACK_FIELD_NUMBER: _ClassVar[int]
    COMPILE_FIELD_NUMBER: _ClassVar[int]
    digest: str
    target: str
    unpack: bool
    compile: bool
    def __init__(self, digest: _Optional[str] = ..., target: _Optional[str] = ..., unpack: bool = ..., compile: bool = ...) -> None: ...

class Registered(_message.Message):
    __slots__ = ("heartbeat_interval_ms", "worker_settings_json", "worker_storage_json", "spares")
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    WORKER_SETTINGS_JSON_FIELD_NUMBER: _ClassVar[int]
    WORKER_STORAGE_JSON_FIELD_NUMBER: _ClassVar[int]
    SPARES_FIELD_NUMBER: _ClassVar[int]
    heartbeat_interval_ms: int
    worker_settings_json: str
    worker_storage_json: str
    spares: int
    def __init__(self, heartbeat_interval_ms: _Optional[int] = ..., worker_settings_json: _Optional[str] = ..., worker_storage_json: _Optional[str] = ..., spares: _Optional[int] = ...) -> None: ...

class RunContainer(_message.Message):
    __slots__ = ("request_id", "container_id", "image", "args", "env", "cpu_millicores", "memory_mib", "secret_names", "workspace_id", "gpu_type", "gpu_count", "objects", "container_server", "working_dir", "volumes", "host_network", "volume_storage", "registry_auth_hosts")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    CPU_MILLICORES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    SECRET_NAMES_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    GPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_SERVER_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIR_FIELD_NUMBER: _ClassVar[int]
    VOLUMES_FIELD_NUMBER: _ClassVar[int]
    HOST_NETWORK_FIELD_NUMBER: _ClassVar[int]
    VOLUME_STORAGE_FIELD_NUMBER: _ClassVar[int]
    REGISTRY_AUTH_HOSTS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    container_id: str
    image: str
    args: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.ScalarMap[str, str]
    cpu_millicores: int
    memory_mib: int
    secret_names: _containers.RepeatedScalarFieldContainer[str]
    workspace_id: str
    gpu_type: str
    gpu_count: int
    objects: _containers.RepeatedCompositeFieldContainer[ObjectMount]
    container_server: bool
    working_dir: str
    volumes: _containers.RepeatedCompositeFieldContainer[_volume_pb2.VolumeMount]
    host_network: bool
    volume_storage: _workspace_pb2.StorageCredentials
    registry_auth_hosts: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request_id: _Optional[str] = ..., container_id: _Optional[str] = ..., image: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., cpu_millicores: _Optional[int] = ..., memory_mib: _Optional[int] = ..., secret_names: _Optional[_Iterable[str]] = ..., workspace_id: _Optional[str] = ..., gpu_type: _Optional[str] = ..., gpu_count: _Optional[int] = ..., objects: _Optional[_Iterable[_Union[ObjectMount, _Mapping]]] = ..., container_server: bool = ..., working_dir: _Optional[str] = ..., volumes: _Optional[_Iterable[_Union[_volume_pb2.VolumeMount, _Mapping]]] = ..., host_network: bool = ..., volume_storage: _Optional[_Union[_workspace_pb2.StorageCredentials, _Mapping]] = ..., registry_auth_hosts: _Optional[_Iterable[str]] = ...) -> None: ...

class StopContainer(_message.Message):
    __slots__ = ("request_id", "container_id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    container_id: str
    def __init__(self, request_id: _Optional[str] = ..., container_id: _Optional[str] = ...) -> None: ...

class ListWorkersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Worker(_message.Message):
    __slots__ = ("worker_id", "pool", "hostname", "runtime", "capacity", "free", "status", "last_heartbeat_at", "cordoned", "containers")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    FREE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_AT_FIELD_NUMBER: _ClassVar[int]
    CORDONED_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    pool: str
    hostname: str
    runtime: str
    capacity: Capacity
    free: Capacity
    status: WorkerStatus
    last_heartbeat_at: str
    cordoned: bool
    containers: int
    def __init__(self, worker_id: _Optional[str] = ..., pool: _Optional[str] = ..., hostname: _Optional[str] = ..., runtime: _Optional[str] = ..., capacity: _Optional[_Union[Capacity, _Mapping]] = ..., free: _Optional[_Union[Capacity, _Mapping]] = ..., status: _Optional[_Union[WorkerStatus, str]] = ..., last_heartbeat_at: _Optional[str] = ..., cordoned: bool = ..., containers: _Optional[int] = ...) -> None: ...

class CordonWorkerRequest(_message.Message):
    __slots__ = ("worker_id",)
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ...) -> None: ...

class CordonWorkerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UncordonWorkerRequest(_message.Message):
    __slots__ = ("worker_id",)
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ...) -> None: ...

class UncordonWorkerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DrainWorkerRequest(_message.Message):
    __slots__ = ("worker_id",)
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ...) -> None: ...

class DrainWorkerResponse(_message.Message):
    __slots__ = ("containers",)
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    containers: int
    def __init__(self, containers: _Optional[int] = ...) -> None: ...

class ListWorkersResponse(_message.Message):
    __slots__ = ("workers",)
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    workers: _containers.RepeatedCompositeFieldContainer[Worker]
    def __init__(self, workers: _Optional[_Iterable[_Union[Worker, _Mapping]]] = ...) -> None: ...

class ExecInput(_message.Message):
    __slots__ = ("exec_id", "start", "stdin", "stdin_close", "output_taken", "kill", "resize")
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    STDIN_CLOSE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TAKEN_FIELD_NUMBER: _ClassVar[int]
    KILL_FIELD_NUMBER: _ClassVar[int]
    RESIZE_FIELD_NUMBER: _ClassVar[int]
    exec_id: str
    start: ExecStart
    stdin: bytes
    stdin_close: bool
    output_taken: int
    kill: bool
    resize: TerminalSize
    def __init__(self, exec_id: _Optional[str] = ..., start: _Optional[_Union[ExecStart, _Mapping]] = ..., stdin: _Optional[bytes] = ..., stdin_close: bool = ..., output_taken: _Optional[int] = ..., kill: bool = ..., resize: _Optional[_Union[TerminalSize, _Mapping]] = ...) -> None: ...

class ExecStart(_message.Message):
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
    terminal_size: TerminalSize
    def __init__(self, container_id: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., working_dir: _Optional[str] = ..., tty: bool = ..., terminal_size: _Optional[_Union[TerminalSize, _Mapping]] = ...) -> None: ...

class TerminalSize(_message.Message):
    __slots__ = ("rows", "cols")
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    rows: int
    cols: int
    def __init__(self, rows: _Optional[int] = ..., cols: _Optional[int] = ...) -> None: ...

class ExecOutput(_message.Message):
    __slots__ = ("exec_id", "stdout", "stderr", "stdin_taken", "exit")
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    STDIN_TAKEN_FIELD_NUMBER: _ClassVar[int]
    EXIT_FIELD_NUMBER: _ClassVar[int]
    exec_id: str
    stdout: bytes
    stderr: bytes
    stdin_taken: int
    exit: ExecExit
    def __init__(self, exec_id: _Optional[str] = ..., stdout: _Optional[bytes] = ..., stderr: _Optional[bytes] = ..., stdin_taken: _Optional[int] = ..., exit: _Optional[_Union[ExecExit, _Mapping]] = ...) -> None: ...

class ExecExit(_message.Message):
    __slots__ = ("exit_code", "error", "not_running")
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    NOT_RUNNING_FIELD_NUMBER: _ClassVar[int]
    exit_code: int
    error: str
    not_running: bool
    def __init__(self, exit_code: _Optional[int] = ..., error: _Optional[str] = ..., not_running: bool = ...) -> None: ...
