from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VerifyImageRequest(_message.Message):
    __slots__ = ("spec",)
    SPEC_FIELD_NUMBER: _ClassVar[int]
    spec: str
    def __init__(self, spec: _Optional[str] = ...) -> None: ...

class VerifyImageResponse(_message.Message):
    __slots__ = ("image_id", "exists", "image_ref")
    IMAGE_ID_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    IMAGE_REF_FIELD_NUMBER: _ClassVar[int]
    image_id: str
    exists: bool
    image_ref: str
    def __init__(self, image_id: _Optional[str] = ..., exists: bool = ..., image_ref: _Optional[str] = ...) -> None: ...

class BuildImageRequest(_message.Message):
    __slots__ = ("spec", "force_rebuild", "sdk_digest", "pip_digest")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    FORCE_REBUILD_FIELD_NUMBER: _ClassVar[int]
    SDK_DIGEST_FIELD_NUMBER: _ClassVar[int]
    PIP_DIGEST_FIELD_NUMBER: _ClassVar[int]
    spec: str
    force_rebuild: bool
    sdk_digest: str
    pip_digest: str
    def __init__(self, spec: _Optional[str] = ..., force_rebuild: bool = ..., sdk_digest: _Optional[str] = ..., pip_digest: _Optional[str] = ...) -> None: ...

class BuildImageEvent(_message.Message):
    __slots__ = ("log", "progress", "done")
    LOG_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    log: str
    progress: BuildProgress
    done: BuiltImage
    def __init__(self, log: _Optional[str] = ..., progress: _Optional[_Union[BuildProgress, _Mapping]] = ..., done: _Optional[_Union[BuiltImage, _Mapping]] = ...) -> None: ...

class BuildProgress(_message.Message):
    __slots__ = ("step", "steps", "description")
    STEP_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    step: int
    steps: int
    description: str
    def __init__(self, step: _Optional[int] = ..., steps: _Optional[int] = ..., description: _Optional[str] = ...) -> None: ...

class BuiltImage(_message.Message):
    __slots__ = ("image_id", "image_ref", "cached")
    IMAGE_ID_FIELD_NUMBER: _ClassVar[int]
    IMAGE_REF_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    image_id: str
    image_ref: str
    cached: bool
    def __init__(self, image_id: _Optional[str] = ..., image_ref: _Optional[str] = ..., cached: bool = ...) -> None: ...

class ListImagesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ImageSummary(_message.Message):
    __slots__ = ("image_id", "image_ref", "size_bytes", "layers", "created_at")
    IMAGE_ID_FIELD_NUMBER: _ClassVar[int]
    IMAGE_REF_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    image_id: str
    image_ref: str
    size_bytes: int
    layers: int
    created_at: str
    def __init__(self, image_id: _Optional[str] = ..., image_ref: _Optional[str] = ..., size_bytes: _Optional[int] = ..., layers: _Optional[int] = ..., created_at: _Optional[str] = ...) -> None: ...

class ListImagesResponse(_message.Message):
    __slots__ = ("images",)
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    images: _containers.RepeatedCompositeFieldContainer[ImageSummary]
    def __init__(self, images: _Optional[_Iterable[_Union[ImageSummary, _Mapping]]] = ...) -> None: ...

class GetImageRequest(_message.Message):
    __slots__ = ("image_id",)
    IMAGE_ID_FIELD_NUMBER: _ClassVar[int]
    image_id: str
    def __init__(self, image_id: _Optional[str] = ...) -> None: ...

class GetImageResponse(_message.Message):
    __slots__ = ("image", "spec", "layer_digests")
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    LAYER_DIGESTS_FIELD_NUMBER: _ClassVar[int]
    image: ImageSummary
    spec: str
    layer_digests: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, image: _Optional[_Union[ImageSummary, _Mapping]] = ..., spec: _Optional[str] = ..., layer_digests: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteImageRequest(_message.Message):
    __slots__ = ("image_id",)
    IMAGE_ID_FIELD_NUMBER: _ClassVar[int]
    image_id: str
    def __init__(self, image_id: _Optional[str] = ...) -> None: ...

class DeleteImageResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
