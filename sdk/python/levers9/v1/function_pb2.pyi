from levers9.v1 import volume_pb2 as _volume_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FinalTaskState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FINAL_TASK_STATE_UNSPECIFIED: _ClassVar[FinalTaskState]
    FINAL_TASK_STATE_COMPLETE: _ClassVar[FinalTaskState]
    FINAL_TASK_STATE_ERROR: _ClassVar[FinalTaskState]
    FINAL_TASK_STATE_TIMEOUT: _ClassVar[FinalTaskState]
    FINAL_TASK_STATE_CANCELLED: _ClassVar[FinalTaskState]

class TaskState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_STATE_UNSPECIFIED: _ClassVar[TaskState]
    TASK_STATE_PENDING: _ClassVar[TaskState]
    TASK_STATE_RUNNING: _ClassVar[TaskState]
    TASK_STATE_RETRY: _ClassVar[TaskState]
    TASK_STATE_COMPLETE: _ClassVar[TaskState]
    TASK_STATE_ERROR: _ClassVar[TaskState]
    TASK_STATE_TIMEOUT: _ClassVar[TaskState]
    TASK_STATE_CANCELLED: _ClassVar[TaskState]

class AttemptOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ATTEMPT_OUTCOME_UNSPECIFIED: _ClassVar[AttemptOutcome]
    ATTEMPT_OUTCOME_RETRIED: _ClassVar[AttemptOutcome]
    ATTEMPT_OUTCOME_LOST: _ClassVar[AttemptOutcome]
    ATTEMPT_OUTCOME_REQUEUED: _ClassVar[AttemptOutcome]
    ATTEMPT_OUTCOME_COMPLETE: _ClassVar[AttemptOutcome]
    ATTEMPT_OUTCOME_ERROR: _ClassVar[AttemptOutcome]
    ATTEMPT_OUTCOME_TIMEOUT: _ClassVar[AttemptOutcome]
    ATTEMPT_OUTCOME_CANCELLED: _ClassVar[AttemptOutcome]
FINAL_TASK_STATE_UNSPECIFIED: FinalTaskState
FINAL_TASK_STATE_COMPLETE: FinalTaskState
FINAL_TASK_STATE_ERROR: FinalTaskState
FINAL_TASK_STATE_TIMEOUT: FinalTaskState
FINAL_TASK_STATE_CANCELLED: FinalTaskState
TASK_STATE_UNSPECIFIED: TaskState
TASK_STATE_PENDING: TaskState
TASK_STATE_RUNNING: TaskState
TASK_STATE_RETRY: TaskState
TASK_STATE_COMPLETE: TaskState
TASK_STATE_ERROR: TaskState
TASK_STATE_TIMEOUT: TaskState
TASK_STATE_CANCELLED: TaskState
ATTEMPT_OUTCOME_UNSPECIFIED: AttemptOutcome
ATTEMPT_OUTCOME_RETRIED: AttemptOutcome
ATTEMPT_OUTCOME_LOST: AttemptOutcome
ATTEMPT_OUTCOME_REQUEUED: AttemptOutcome
ATTEMPT_OUTCOME_COMPLETE: AttemptOutcome
ATTEMPT_OUTCOME_ERROR: AttemptOutcome
ATTEMPT_OUTCOME_TIMEOUT: AttemptOutcome
ATTEMPT_OUTCOME_CANCELLED: AttemptOutcome

class HeadObjectRequest(_message.Message):
    __slots__ = ("digest",)
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    digest: str
    def __init__(self, digest: _Optional[str] = ...) -> None: ...

class HeadObjectResponse(_message.Message):
    __slots__ = ("exists",)
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    exists: bool
    def __init__(self, exists: bool = ...) -> None: ...

class PutObjectRequest(_message.Message):
    __slots__ = ("digest", "data")
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    digest: str
    data: bytes
    def __init__(self, digest: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class PutObjectResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetObjectRequest(_message.Message):
    __slots__ = ("digest", "workspace_id")
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    digest: str
    workspace_id: str
    def __init__(self, digest: _Optional[str] = ..., workspace_id: _Optional[str] = ...) -> None: ...

class GetObjectResponse(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class StubConfig(_message.Message):
    __slots__ = ("image", "cpu_millicores", "memory_mib", "gpu_types", "gpu_count", "retries", "timeout_seconds", "keep_warm_seconds", "concurrency", "env", "secrets", "pool", "max_containers", "volumes", "generator", "min_containers", "class_parameters")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    CPU_MILLICORES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPES_FIELD_NUMBER: _ClassVar[int]
    GPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    RETRIES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    KEEP_WARM_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    MAX_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    VOLUMES_FIELD_NUMBER: _ClassVar[int]
    GENERATOR_FIELD_NUMBER: _ClassVar[int]
    MIN_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    CLASS_PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    image: str
    cpu_millicores: int
    memory_mib: int
    gpu_types: _containers.RepeatedScalarFieldContainer[str]
    gpu_count: int
    retries: int
    timeout_seconds: int
    keep_warm_seconds: int
    concurrency: int
    env: _containers.ScalarMap[str, str]
    secrets: _containers.RepeatedScalarFieldContainer[str]
    pool: str
    max_containers: int
    volumes: _containers.RepeatedCompositeFieldContainer[_volume_pb2.VolumeMount]
    generator: bool
    min_containers: int
    class_parameters: bytes
    def __init__(self, image: _Optional[str] = ..., cpu_millicores: _Optional[int] = ..., memory_mib: _Optional[int] = ..., gpu_types: _Optional[_Iterable[str]] = ..., gpu_count: _Optional[int] = ..., retries: _Optional[int] = ..., timeout_seconds: _Optional[int] = ..., keep_warm_seconds: _Optional[int] = ..., concurrency: _Optional[int] = ..., env: _Optional[_Mapping[str, str]] = ..., secrets: _Optional[_Iterable[str]] = ..., pool: _Optional[str] = ..., max_containers: _Optional[int] = ..., volumes: _Optional[_Iterable[_Union[_volume_pb2.VolumeMount, _Mapping]]] = ..., generator: bool = ..., min_containers: _Optional[int] = ..., class_parameters: _Optional[bytes] = ...) -> None: ...

class GetOrCreateStubRequest(_message.Message):
    __slots__ = ("name", "code_digest", "sdk_digest", "module_path", "function_name", "config")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CODE_DIGEST_FIELD_NUMBER: _ClassVar[int]
    SDK_DIGEST_FIELD_NUMBER: _ClassVar[int]
    MODULE_PATH_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    name: str
    code_digest: str
    sdk_digest: str
    module_path: str
    function_name: str
    config: StubConfig
    def __init__(self, name: _Optional[str] = ..., code_digest: _Optional[str] = ..., sdk_digest: _Optional[str] = ..., module_path: _Optional[str] = ..., function_name: _Optional[str] = ..., config: _Optional[_Union[StubConfig, _Mapping]] = ...) -> None: ...

class GetOrCreateStubResponse(_message.Message):
    __slots__ = ("stub_id",)
    STUB_ID_FIELD_NUMBER: _ClassVar[int]
    stub_id: str
    def __init__(self, stub_id: _Optional[str] = ...) -> None: ...

class Stub(_message.Message):
    __slots__ = ("stub_id", "name", "module_path", "function_name", "config", "created_at")
    STUB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MODULE_PATH_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    stub_id: str
    name: str
    module_path: str
    function_name: str
    config: StubConfig
    created_at: str
    def __init__(self, stub_id: _Optional[str] = ..., name: _Optional[str] = ..., module_path: _Optional[str] = ..., function_name: _Optional[str] = ..., config: _Optional[_Union[StubConfig, _Mapping]] = ..., created_at: _Optional[str] = ...) -> None: ...

class ListStubsRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class ListStubsResponse(_message.Message):
    __slots__ = ("stubs",)
    STUBS_FIELD_NUMBER: _ClassVar[int]
    stubs: _containers.RepeatedCompositeFieldContainer[Stub]
    def __init__(self, stubs: _Optional[_Iterable[_Union[Stub, _Mapping]]] = ...) -> None: ...

class GetStubRequest(_message.Message):
    __slots__ = ("stub_id",)
    STUB_ID_FIELD_NUMBER: _ClassVar[int]
    stub_id: str
    def __init__(self, stub_id: _Optional[str] = ...) -> None: ...

class GetStubResponse(_message.Message):
    __slots__ = ("stub",)
    STUB_FIELD_NUMBER: _ClassVar[int]
    stub: Stub
    def __init__(self, stub: _Optional[_Union[Stub, _Mapping]] = ...) -> None: ...

class RunRequest(_message.Message):
    __slots__ = ("start", "input", "inputs", "received")
    START_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_FIELD_NUMBER: _ClassVar[int]
    start: RunStart
    input: RunInput
    inputs: RunInputs
    received: ItemsReceived
    def __init__(self, start: _Optional[_Union[RunStart, _Mapping]] = ..., input: _Optional[_Union[RunInput, _Mapping]] = ..., inputs: _Optional[_Union[RunInputs, _Mapping]] = ..., received: _Optional[_Union[ItemsReceived, _Mapping]] = ...) -> None: ...

class ItemsReceived(_message.Message):
    __slots__ = ("task_id", "received")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    received: int
    def __init__(self, task_id: _Optional[str] = ..., received: _Optional[int] = ...) -> None: ...

class RunInputs(_message.Message):
    __slots__ = ("inputs",)
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    inputs: _containers.RepeatedCompositeFieldContainer[RunInput]
    def __init__(self, inputs: _Optional[_Iterable[_Union[RunInput, _Mapping]]] = ...) -> None: ...

class RunStart(_message.Message):
    __slots__ = ("stub_id", "report_accepted", "batch_results", "generator")
    STUB_ID_FIELD_NUMBER: _ClassVar[int]
    REPORT_ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    BATCH_RESULTS_FIELD_NUMBER: _ClassVar[int]
    GENERATOR_FIELD_NUMBER: _ClassVar[int]
    stub_id: str
    report_accepted: bool
    batch_results: bool
    generator: bool
    def __init__(self, stub_id: _Optional[str] = ..., report_accepted: bool = ..., batch_results: bool = ..., generator: bool = ...) -> None: ...

class RunInput(_message.Message):
    __slots__ = ("index", "payload")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    index: int
    payload: bytes
    def __init__(self, index: _Optional[int] = ..., payload: _Optional[bytes] = ...) -> None: ...

class CallRequest(_message.Message):
    __slots__ = ("start", "input")
    START_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    start: RunStart
    input: RunInput
    def __init__(self, start: _Optional[_Union[RunStart, _Mapping]] = ..., input: _Optional[_Union[RunInput, _Mapping]] = ...) -> None: ...

class RunEvent(_message.Message):
    __slots__ = ("accepted", "output", "retrying", "result", "results", "item")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    RETRYING_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    accepted: TaskAccepted
    output: TaskOutputEvent
    retrying: TaskRetrying
    result: TaskOutcome
    results: TaskOutcomes
    item: TaskItemEvent
    def __init__(self, accepted: _Optional[_Union[TaskAccepted, _Mapping]] = ..., output: _Optional[_Union[TaskOutputEvent, _Mapping]] = ..., retrying: _Optional[_Union[TaskRetrying, _Mapping]] = ..., result: _Optional[_Union[TaskOutcome, _Mapping]] = ..., results: _Optional[_Union[TaskOutcomes, _Mapping]] = ..., item: _Optional[_Union[TaskItemEvent, _Mapping]] = ...) -> None: ...

class TaskItemEvent(_message.Message):
    __slots__ = ("index", "task_id", "item_index", "payload", "worker_id", "container_id")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_INDEX_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    index: int
    task_id: str
    item_index: int
    payload: bytes
    worker_id: str
    container_id: str
    def __init__(self, index: _Optional[int] = ..., task_id: _Optional[str] = ..., item_index: _Optional[int] = ..., payload: _Optional[bytes] = ..., worker_id: _Optional[str] = ..., container_id: _Optional[str] = ...) -> None: ...

class TaskOutcomes(_message.Message):
    __slots__ = ("outcomes",)
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[TaskOutcome]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[TaskOutcome, _Mapping]]] = ...) -> None: ...

class TaskAccepted(_message.Message):
    __slots__ = ("index", "task_id")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    index: int
    task_id: str
    def __init__(self, index: _Optional[int] = ..., task_id: _Optional[str] = ...) -> None: ...

class TaskOutputEvent(_message.Message):
    __slots__ = ("index", "task_id", "stream", "data")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    index: int
    task_id: str
    stream: str
    data: bytes
    def __init__(self, index: _Optional[int] = ..., task_id: _Optional[str] = ..., stream: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class TaskRetrying(_message.Message):
    __slots__ = ("index", "task_id", "attempt", "reason")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    index: int
    task_id: str
    attempt: int
    reason: str
    def __init__(self, index: _Optional[int] = ..., task_id: _Optional[str] = ..., attempt: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class TaskOutcome(_message.Message):
    __slots__ = ("index", "task_id", "state", "payload", "traceback", "message")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    TRACEBACK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    index: int
    task_id: str
    state: FinalTaskState
    payload: bytes
    traceback: str
    message: str
    def __init__(self, index: _Optional[int] = ..., task_id: _Optional[str] = ..., state: _Optional[_Union[FinalTaskState, str]] = ..., payload: _Optional[bytes] = ..., traceback: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class SpawnTaskRequest(_message.Message):
    __slots__ = ("stub_id", "payload")
    STUB_ID_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    stub_id: str
    payload: bytes
    def __init__(self, stub_id: _Optional[str] = ..., payload: _Optional[bytes] = ...) -> None: ...

class SpawnTaskResponse(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class WaitTaskRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("task_id", "stub_id", "function_name", "state", "attempts", "container_id", "worker_id", "message", "created_at", "started_at", "ended_at")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STUB_ID_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    stub_id: str
    function_name: str
    state: TaskState
    attempts: int
    container_id: str
    worker_id: str
    message: str
    created_at: str
    started_at: str
    ended_at: str
    def __init__(self, task_id: _Optional[str] = ..., stub_id: _Optional[str] = ..., function_name: _Optional[str] = ..., state: _Optional[_Union[TaskState, str]] = ..., attempts: _Optional[int] = ..., container_id: _Optional[str] = ..., worker_id: _Optional[str] = ..., message: _Optional[str] = ..., created_at: _Optional[str] = ..., started_at: _Optional[str] = ..., ended_at: _Optional[str] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ...) -> None: ...

class GetTaskRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class GetTaskResponse(_message.Message):
    __slots__ = ("task", "attempts")
    TASK_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    task: Task
    attempts: _containers.RepeatedCompositeFieldContainer[TaskAttempt]
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., attempts: _Optional[_Iterable[_Union[TaskAttempt, _Mapping]]] = ...) -> None: ...

class TaskAttempt(_message.Message):
    __slots__ = ("attempt", "container_id", "worker_id", "started_at", "ended_at", "outcome", "message")
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    container_id: str
    worker_id: str
    started_at: str
    ended_at: str
    outcome: AttemptOutcome
    message: str
    def __init__(self, attempt: _Optional[int] = ..., container_id: _Optional[str] = ..., worker_id: _Optional[str] = ..., started_at: _Optional[str] = ..., ended_at: _Optional[str] = ..., outcome: _Optional[_Union[AttemptOutcome, str]] = ..., message: _Optional[str] = ...) -> None: ...

class CancelTaskRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class CancelTaskResponse(_message.Message):
    __slots__ = ("task",)
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class DeployedFunction(_message.Message):
    __slots__ = ("function_name", "stub_id", "schedule", "endpoint")
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    STUB_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    function_name: str
    stub_id: str
    schedule: Schedule
    endpoint: EndpointSpec
    def __init__(self, function_name: _Optional[str] = ..., stub_id: _Optional[str] = ..., schedule: _Optional[_Union[Schedule, _Mapping]] = ..., endpoint: _Optional[_Union[EndpointSpec, _Mapping]] = ...) -> None: ...

class EndpointSpec(_message.Message):
    __slots__ = ("name", "public", "asgi")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_FIELD_NUMBER: _ClassVar[int]
    ASGI_FIELD_NUMBER: _ClassVar[int]
    name: str
    public: bool
    asgi: bool
    def __init__(self, name: _Optional[str] = ..., public: bool = ..., asgi: bool = ...) -> None: ...

class Schedule(_message.Message):
    __slots__ = ("cron", "period_seconds")
    CRON_FIELD_NUMBER: _ClassVar[int]
    PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    cron: str
    period_seconds: int
    def __init__(self, cron: _Optional[str] = ..., period_seconds: _Optional[int] = ...) -> None: ...

class DeployRequest(_message.Message):
    __slots__ = ("app_name", "functions")
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    functions: _containers.RepeatedCompositeFieldContainer[DeployedFunction]
    def __init__(self, app_name: _Optional[str] = ..., functions: _Optional[_Iterable[_Union[DeployedFunction, _Mapping]]] = ...) -> None: ...

class DeployResponse(_message.Message):
    __slots__ = ("version",)
    VERSION_FIELD_NUMBER: _ClassVar[int]
    version: int
    def __init__(self, version: _Optional[int] = ...) -> None: ...

class Deployment(_message.Message):
    __slots__ = ("app_name", "function_name", "stub_id", "version", "deployed_by", "created_at")
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    STUB_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DEPLOYED_BY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    function_name: str
    stub_id: str
    version: int
    deployed_by: str
    created_at: str
    def __init__(self, app_name: _Optional[str] = ..., function_name: _Optional[str] = ..., stub_id: _Optional[str] = ..., version: _Optional[int] = ..., deployed_by: _Optional[str] = ..., created_at: _Optional[str] = ...) -> None: ...

class ListDeploymentsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListDeploymentsResponse(_message.Message):
    __slots__ = ("deployments",)
    DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    deployments: _containers.RepeatedCompositeFieldContainer[Deployment]
    def __init__(self, deployments: _Optional[_Iterable[_Union[Deployment, _Mapping]]] = ...) -> None: ...

class GetDeploymentRequest(_message.Message):
    __slots__ = ("app_name", "function_name")
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    function_name: str
    def __init__(self, app_name: _Optional[str] = ..., function_name: _Optional[str] = ...) -> None: ...

class GetDeploymentResponse(_message.Message):
    __slots__ = ("deployment",)
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    deployment: Deployment
    def __init__(self, deployment: _Optional[_Union[Deployment, _Mapping]] = ...) -> None: ...

class ListSchedulesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ScheduleInfo(_message.Message):
    __slots__ = ("app_name", "function_name", "schedule", "stub_id", "last_tick", "last_task_id", "next_tick")
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    STUB_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_TICK_FIELD_NUMBER: _ClassVar[int]
    LAST_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    NEXT_TICK_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    function_name: str
    schedule: Schedule
    stub_id: str
    last_tick: str
    last_task_id: str
    next_tick: str
    def __init__(self, app_name: _Optional[str] = ..., function_name: _Optional[str] = ..., schedule: _Optional[_Union[Schedule, _Mapping]] = ..., stub_id: _Optional[str] = ..., last_tick: _Optional[str] = ..., last_task_id: _Optional[str] = ..., next_tick: _Optional[str] = ...) -> None: ...

class ListSchedulesResponse(_message.Message):
    __slots__ = ("schedules",)
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    schedules: _containers.RepeatedCompositeFieldContainer[ScheduleInfo]
    def __init__(self, schedules: _Optional[_Iterable[_Union[ScheduleInfo, _Mapping]]] = ...) -> None: ...
