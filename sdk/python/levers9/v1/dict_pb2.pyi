from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NamedObject(_message.Message):
    __slots__ = ("name", "created_at", "len")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    LEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    created_at: str
    len: int
    def __init__(self, name: _Optional[str] = ..., created_at: _Optional[str] = ..., len: _Optional[int] = ...) -> None: ...

class DictEntry(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    value: bytes
    def __init__(self, key: _Optional[bytes] = ..., value: _Optional[bytes] = ...) -> None: ...

class GetDictRequest(_message.Message):
    __slots__ = ("name", "create_if_missing")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CREATE_IF_MISSING_FIELD_NUMBER: _ClassVar[int]
    name: str
    create_if_missing: bool
    def __init__(self, name: _Optional[str] = ..., create_if_missing: bool = ...) -> None: ...

class GetDictResponse(_message.Message):
    __slots__ = ("dict", "created")
    DICT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    dict: NamedObject
    created: bool
    def __init__(self, dict: _Optional[_Union[NamedObject, _Mapping]] = ..., created: bool = ...) -> None: ...

class ListDictsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListDictsResponse(_message.Message):
    __slots__ = ("dicts",)
    DICTS_FIELD_NUMBER: _ClassVar[int]
    dicts: _containers.RepeatedCompositeFieldContainer[NamedObject]
    def __init__(self, dicts: _Optional[_Iterable[_Union[NamedObject, _Mapping]]] = ...) -> None: ...

class DeleteDictRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteDictResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DictPutRequest(_message.Message):
    __slots__ = ("name", "entries", "skip_existing")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    SKIP_EXISTING_FIELD_NUMBER: _ClassVar[int]
    name: str
    entries: _containers.RepeatedCompositeFieldContainer[DictEntry]
    skip_existing: bool
    def __init__(self, name: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[DictEntry, _Mapping]]] = ..., skip_existing: bool = ...) -> None: ...

class DictPutResponse(_message.Message):
    __slots__ = ("added",)
    ADDED_FIELD_NUMBER: _ClassVar[int]
    added: int
    def __init__(self, added: _Optional[int] = ...) -> None: ...

class DictGetRequest(_message.Message):
    __slots__ = ("name", "key")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    name: str
    key: bytes
    def __init__(self, name: _Optional[str] = ..., key: _Optional[bytes] = ...) -> None: ...

class DictGetResponse(_message.Message):
    __slots__ = ("found", "value")
    FOUND_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    found: bool
    value: bytes
    def __init__(self, found: bool = ..., value: _Optional[bytes] = ...) -> None: ...

class DictPopRequest(_message.Message):
    __slots__ = ("name", "key")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    name: str
    key: bytes
    def __init__(self, name: _Optional[str] = ..., key: _Optional[bytes] = ...) -> None: ...

class DictPopResponse(_message.Message):
    __slots__ = ("found", "value")
    FOUND_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    found: bool
    value: bytes
    def __init__(self, found: bool = ..., value: _Optional[bytes] = ...) -> None: ...

class DictLenRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DictLenResponse(_message.Message):
    __slots__ = ("len",)
    LEN_FIELD_NUMBER: _ClassVar[int]
    len: int
    def __init__(self, len: _Optional[int] = ...) -> None: ...

class DictEntriesRequest(_message.Message):
    __slots__ = ("name", "keys_only")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KEYS_ONLY_FIELD_NUMBER: _ClassVar[int]
    name: str
    keys_only: bool
    def __init__(self, name: _Optional[str] = ..., keys_only: bool = ...) -> None: ...

class DictEntriesResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[DictEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[DictEntry, _Mapping]]] = ...) -> None: ...

class DictClearRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DictClearResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
