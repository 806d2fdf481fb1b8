from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListLogsRequest(_message.Message):
    __slots__ = ("task_id", "app_name", "function_name", "stub_id", "since", "limit", "tail", "after_id")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    STUB_ID_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TAIL_FIELD_NUMBER: _ClassVar[int]
    AFTER_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    app_name: str
    function_name: str
    stub_id: str
    since: str
    limit: int
    tail: bool
    after_id: int
    def __init__(self, task_id: _Optional[str] = ..., app_name: _Optional[str] = ..., function_name: _Optional[str] = ..., stub_id: _Optional[str] = ..., since: _Optional[str] = ..., limit: _Optional[int] = ..., tail: bool = ..., after_id: _Optional[int] = ...) -> None: ...

class LogLine(_message.Message):
    __slots__ = ("id", "task_id", "stub_id", "stream", "data", "received_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STUB_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_AT_FIELD_NUMBER: _ClassVar[int]
    id: int
    task_id: str
    stub_id: str
    stream: str
    data: bytes
    received_at: str
    def __init__(self, id: _Optional[int] = ..., task_id: _Optional[str] = ..., stub_id: _Optional[str] = ..., stream: _Optional[str] = ..., data: _Optional[bytes] = ..., received_at: _Optional[str] = ...) -> None: ...

class ListLogsResponse(_message.Message):
    __slots__ = ("lines",)
    LINES_FIELD_NUMBER: _ClassVar[int]
    lines: _containers.RepeatedCompositeFieldContainer[LogLine]
    def __init__(self, lines: _Optional[_Iterable[_Union[LogLine, _Mapping]]] = ...) -> None: ...

class FollowLogsResponse(_message.Message):
    __slots__ = ("lines",)
    LINES_FIELD_NUMBER: _ClassVar[int]
    lines: _containers.RepeatedCompositeFieldContainer[LogLine]
    def __init__(self, lines: _Optional[_Iterable[_Union[LogLine, _Mapping]]] = ...) -> None: ...
