from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PoolScaling(_message.Message):
    __slots__ = ("min_workers", "max_workers", "requests_per_worker")
    MIN_WORKERS_FIELD_NUMBER: _ClassVar[int]
    MAX_WORKERS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_WORKER_FIELD_NUMBER: _ClassVar[int]
    min_workers: int
    max_workers: int
    requests_per_worker: int
    def __init__(self, min_workers: _Optional[int] = ..., max_workers: _Optional[int] = ..., requests_per_worker: _Optional[int] = ...) -> None: ...

class GetWorkersWantedRequest(_message.Message):
    __slots__ = ("pool", "scaling")
    POOL_FIELD_NUMBER: _ClassVar[int]
    SCALING_FIELD_NUMBER: _ClassVar[int]
    pool: str
    scaling: PoolScaling
    def __init__(self, pool: _Optional[str] = ..., scaling: _Optional[_Union[PoolScaling, _Mapping]] = ...) -> None: ...

class GetWorkersWantedResponse(_message.Message):
    __slots__ = ("pool", "wanted", "waiting", "present", "busy", "scaling")
    POOL_FIELD_NUMBER: _ClassVar[int]
    WANTED_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    PRESENT_FIELD_NUMBER: _ClassVar[int]
    BUSY_FIELD_NUMBER: _ClassVar[int]
    SCALING_FIELD_NUMBER: _ClassVar[int]
    pool: str
    wanted: int
    waiting: int
    present: int
    busy: int
    scaling: PoolScaling
    def __init__(self, pool: _Optional[str] = ..., wanted: _Optional[int] = ..., waiting: _Optional[int] = ..., present: _Optional[int] = ..., busy: _Optional[int] = ..., scaling: _Optional[_Union[PoolScaling, _Mapping]] = ...) -> None: ...
