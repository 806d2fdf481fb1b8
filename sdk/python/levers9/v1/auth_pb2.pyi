from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class AuthorizeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AuthorizeResponse(_message.Message):
    __slots__ = ("workspace_id", "workspace_name", "token_type", "new_token")
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_TYPE_FIELD_NUMBER: _ClassVar[int]
    NEW_TOKEN_FIELD_NUMBER: _ClassVar[int]
    workspace_id: str
    workspace_name: str
    token_type: str
    new_token: str
    def __init__(self, workspace_id: _Optional[str] = ..., workspace_name: _Optional[str] = ..., token_type: _Optional[str] = ..., new_token: _Optional[str] = ...) -> None: ...
