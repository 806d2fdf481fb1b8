from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Workspace(_message.Message):
    __slots__ = ("id", "name", "created_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    created_at: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., created_at: _Optional[str] = ...) -> None: ...

class CreateWorkspaceRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class CreateWorkspaceResponse(_message.Message):
    __slots__ = ("workspace", "admin_token")
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    ADMIN_TOKEN_FIELD_NUMBER: _ClassVar[int]
    workspace: Workspace
    admin_token: str
    def __init__(self, workspace: _Optional[_Union[Workspace, _Mapping]] = ..., admin_token: _Optional[str] = ...) -> None: ...

class GetWorkspaceRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetWorkspaceResponse(_message.Message):
    __slots__ = ("workspace",)
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    workspace: Workspace
    def __init__(self, workspace: _Optional[_Union[Workspace, _Mapping]] = ...) -> None: ...

class StorageCredentials(_message.Message):
    __slots__ = ("endpoint", "bucket", "access_key_id", "secret_access_key")
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    ACCESS_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    SECRET_ACCESS_KEY_FIELD_NUMBER: _ClassVar[int]
    endpoint: str
    bucket: str
    access_key_id: str
    secret_access_key: str
    def __init__(self, endpoint: _Optional[str] = ..., bucket: _Optional[str] = ..., access_key_id: _Optional[str] = ..., secret_access_key: _Optional[str] = ...) -> None: ...

class SetStorageCredentialsRequest(_message.Message):
    __slots__ = ("credentials",)
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    credentials: StorageCredentials
    def __init__(self, credentials: _Optional[_Union[StorageCredentials, _Mapping]] = ...) -> None: ...

class SetStorageCredentialsResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStorageCredentialsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStorageCredentialsResponse(_message.Message):
    __slots__ = ("credentials", "key_id")
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    credentials: StorageCredentials
    key_id: str
    def __init__(self, credentials: _Optional[_Union[StorageCredentials, _Mapping]] = ..., key_id: _Optional[str] = ...) -> None: ...
