from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VolumeMount(_message.Message):
    __slots__ = ("name", "mount_path")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MOUNT_PATH_FIELD_NUMBER: _ClassVar[int]
    name: str
    mount_path: str
    def __init__(self, name: _Optional[str] = ..., mount_path: _Optional[str] = ...) -> None: ...

class CreateVolumeRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class CreateVolumeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListVolumesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListVolumesResponse(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteVolumeRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteVolumeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FileEntry(_message.Message):
    __slots__ = ("path", "is_dir", "size", "modified_at")
    PATH_FIELD_NUMBER: _ClassVar[int]
    IS_DIR_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_AT_FIELD_NUMBER: _ClassVar[int]
    path: str
    is_dir: bool
    size: int
    modified_at: str
    def __init__(self, path: _Optional[str] = ..., is_dir: bool = ..., size: _Optional[int] = ..., modified_at: _Optional[str] = ...) -> None: ...

class ListFilesRequest(_message.Message):
    __slots__ = ("volume", "path")
    VOLUME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    volume: str
    path: str
    def __init__(self, volume: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class ListFilesResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[FileEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[FileEntry, _Mapping]]] = ...) -> None: ...

class RemoveFileRequest(_message.Message):
    __slots__ = ("volume", "path", "recursive")
    VOLUME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    RECURSIVE_FIELD_NUMBER: _ClassVar[int]
    volume: str
    path: str
    recursive: bool
    def __init__(self, volume: _Optional[str] = ..., path: _Optional[str] = ..., recursive: bool = ...) -> None: ...

class RemoveFileResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UploadOffsetRequest(_message.Message):
    __slots__ = ("volume", "path")
    VOLUME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    volume: str
    path: str
    def __init__(self, volume: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class UploadOffsetResponse(_message.Message):
    __slots__ = ("offset",)
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    offset: int
    def __init__(self, offset: _Optional[int] = ...) -> None: ...

class UploadStart(_message.Message):
    __slots__ = ("volume", "path", "offset", "total_size")
    VOLUME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    volume: str
    path: str
    offset: int
    total_size: int
    def __init__(self, volume: _Optional[str] = ..., path: _Optional[str] = ..., offset: _Optional[int] = ..., total_size: _Optional[int] = ...) -> None: ...

class UploadFileRequest(_message.Message):
    __slots__ = ("start", "data")
    START_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    start: UploadStart
    data: bytes
    def __init__(self, start: _Optional[_Union[UploadStart, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class UploadFileResponse(_message.Message):
    __slots__ = ("size", "sha256", "complete")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    size: int
    sha256: str
    complete: bool
    def __init__(self, size: _Optional[int] = ..., sha256: _Optional[str] = ..., complete: bool = ...) -> None: ...

class DownloadFileRequest(_message.Message):
    __slots__ = ("volume", "path", "offset", "length")
    VOLUME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    volume: str
    path: str
    offset: int
    length: int
    def __init__(self, volume: _Optional[str] = ..., path: _Optional[str] = ..., offset: _Optional[int] = ..., length: _Optional[int] = ...) -> None: ...

class DownloadFileResponse(_message.Message):
    __slots__ = ("total_size", "data")
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    total_size: int
    data: bytes
    def __init__(self, total_size: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...
