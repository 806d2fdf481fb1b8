from levers9.v1 import worker_pb2 as _worker_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MachineState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MACHINE_STATE_UNSPECIFIED: _ClassVar[MachineState]
    MACHINE_STATE_PENDING: _ClassVar[MachineState]
    MACHINE_STATE_JOINED: _ClassVar[MachineState]
    MACHINE_STATE_DRAINING: _ClassVar[MachineState]
    MACHINE_STATE_EXPIRED: _ClassVar[MachineState]
MACHINE_STATE_UNSPECIFIED: MachineState
MACHINE_STATE_PENDING: MachineState
MACHINE_STATE_JOINED: MachineState
MACHINE_STATE_DRAINING: MachineState
MACHINE_STATE_EXPIRED: MachineState

class Pool(_message.Message):
    __slots__ = ("name", "source", "runtime", "gpu_type", "created_at", "machines")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    MACHINES_FIELD_NUMBER: _ClassVar[int]
    name: str
    source: str
    runtime: str
    gpu_type: str
    created_at: str
    machines: int
    def __init__(self, name: _Optional[str] = ..., source: _Optional[str] = ..., runtime: _Optional[str] = ..., gpu_type: _Optional[str] = ..., created_at: _Optional[str] = ..., machines: _Optional[int] = ...) -> None: ...

class CreatePoolRequest(_message.Message):
    __slots__ = ("name", "runtime", "gpu_type")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    runtime: str
    gpu_type: str
    def __init__(self, name: _Optional[str] = ..., runtime: _Optional[str] = ..., gpu_type: _Optional[str] = ...) -> None: ...

class CreatePoolResponse(_message.Message):
    __slots__ = ("pool",)
    POOL_FIELD_NUMBER: _ClassVar[int]
    pool: Pool
    def __init__(self, pool: _Optional[_Union[Pool, _Mapping]] = ...) -> None: ...

class ListPoolsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListPoolsResponse(_message.Message):
    __slots__ = ("pools",)
    POOLS_FIELD_NUMBER: _ClassVar[int]
    pools: _containers.RepeatedCompositeFieldContainer[Pool]
    def __init__(self, pools: _Optional[_Iterable[_Union[Pool, _Mapping]]] = ...) -> None: ...

class DeletePoolRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeletePoolResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Machine(_message.Message):
    __slots__ = ("machine_id", "pool", "state", "hostname", "capacity", "created_at", "join_expires_at", "joined_at", "connected")
    MACHINE_ID_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    JOIN_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    JOINED_AT_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_FIELD_NUMBER: _ClassVar[int]
    machine_id: str
    pool: str
    state: MachineState
    hostname: str
    capacity: _worker_pb2.Capacity
    created_at: str
    join_expires_at: str
    joined_at: str
    connected: bool
    def __init__(self, machine_id: _Optional[str] = ..., pool: _Optional[str] = ..., state: _Optional[_Union[MachineState, str]] = ..., hostname: _Optional[str] = ..., capacity: _Optional[_Union[_worker_pb2.Capacity, _Mapping]] = ..., created_at: _Optional[str] = ..., join_expires_at: _Optional[str] = ..., joined_at: _Optional[str] = ..., connected: bool = ...) -> None: ...

class CreateMachineRequest(_message.Message):
    __slots__ = ("pool", "ttl_seconds")
    POOL_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    pool: str
    ttl_seconds: int
    def __init__(self, pool: _Optional[str] = ..., ttl_seconds: _Optional[int] = ...) -> None: ...

class CreateMachineResponse(_message.Message):
    __slots__ = ("machine", "join_token")
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    JOIN_TOKEN_FIELD_NUMBER: _ClassVar[int]
    machine: Machine
    join_token: str
    def __init__(self, machine: _Optional[_Union[Machine, _Mapping]] = ..., join_token: _Optional[str] = ...) -> None: ...

class ListMachinesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListMachinesResponse(_message.Message):
    __slots__ = ("machines",)
    MACHINES_FIELD_NUMBER: _ClassVar[int]
    machines: _containers.RepeatedCompositeFieldContainer[Machine]
    def __init__(self, machines: _Optional[_Iterable[_Union[Machine, _Mapping]]] = ...) -> None: ...

class DrainMachineRequest(_message.Message):
    __slots__ = ("machine_id",)
    MACHINE_ID_FIELD_NUMBER: _ClassVar[int]
    machine_id: str
    def __init__(self, machine_id: _Optional[str] = ...) -> None: ...

class DrainMachineResponse(_message.Message):
    __slots__ = ("containers",)
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    containers: int
    def __init__(self, containers: _Optional[int] = ...) -> None: ...

class DeleteMachineRequest(_message.Message):
    __slots__ = ("machine_id",)
    MACHINE_ID_FIELD_NUMBER: _ClassVar[int]
    machine_id: str
    def __init__(self, machine_id: _Optional[str] = ...) -> None: ...

class DeleteMachineResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class JoinMachineRequest(_message.Message):
    __slots__ = ("hostname", "capacity")
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    hostname: str
    capacity: _worker_pb2.Capacity
    def __init__(self, hostname: _Optional[str] = ..., capacity: _Optional[_Union[_worker_pb2.Capacity, _Mapping]] = ...) -> None: ...

class JoinMachineResponse(_message.Message):
    __slots__ = ("machine_id", "pool", "runtime", "worker_token")
    MACHINE_ID_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    WORKER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    machine_id: str
    pool: str
    runtime: str
    worker_token: str
    def __init__(self, machine_id: _Optional[str] = ..., pool: _Optional[str] = ..., runtime: _Optional[str] = ..., worker_token: _Optional[str] = ...) -> None: ...
