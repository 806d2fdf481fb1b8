"""The client side of image builds: upload what the build needs, stream the log."""

from __future__ import annotations

import os
import threading
from typing import Callable, Optional

import grpc

from .archive import Archive, build_zip, collect_tree
from .errors import Levers9Error
from .ignore import IgnoreRules
from .v1 import function_pb2, image_pb2

_lock = threading.Lock()
_pip: Optional[Archive] = None


class ImageBuildError(Levers9Error):
    """The image build failed: the message names the step, its exit code and the end of its log."""


def _client(client):
    if client is not None:
        return client
    from .client import get_client

    return get_client()


def pip_archive() -> Archive:
    """pip itself, from this environment: the build container runs it with the image's Python."""
    global _pip
    with _lock:
        if _pip is not None:
            return _pip
    try:
        import pip
    except ImportError:
        raise Levers9Error("add_python_packages needs pip installed where the SDK runs: python -m ensurepip") from None
    package_dir = os.path.dirname(os.path.abspath(pip.__file__))
    entries = [(f"pip/{rel}", full) for rel, full in collect_tree(package_dir, IgnoreRules([]))]
    archive = build_zip(entries, what="pip object")
    with _lock:
        _pip = archive
    return archive


def _upload(client, data: bytes, digest: str) -> None:
    from .client import PUT_OBJECT_TIMEOUT_SECONDS

    head = client.call("HeadObject", function_pb2.HeadObjectRequest(digest=digest))
    if not head.exists:
        client.call(
            "PutObject", function_pb2.PutObjectRequest(digest=digest, data=data), timeout=PUT_OBJECT_TIMEOUT_SECONDS
        )


def verify(image, client=None) -> image_pb2.VerifyImageResponse:
    return _client(client).call_images("VerifyImage", image_pb2.VerifyImageRequest(spec=image.spec()))


def build(image, force: bool, log: Callable[[str], None], client=None) -> str:
    """Builds `image` (or finds it built); its reference by digest."""
    from .stub import _sdk_object, ensure_stored

    client = _client(client)
    if not force:
        found = verify(image, client)
        if found.exists:
            log(f"image {found.image_id[:12]} is built already")
            return found.image_ref
    sdk = _sdk_object()
    ensure_stored(client, sdk)
    pip_digest = ""
    if any(step["kind"] == "pip" for step in image.steps):
        pip = pip_archive()
        ensure_stored(client, pip)
        pip_digest = pip.digest
    for digest, data in image._files.items():
        _upload(client, data, digest)
    request = image_pb2.BuildImageRequest(
        spec=image.spec(), force_rebuild=force, sdk_digest=sdk.digest, pip_digest=pip_digest
    )
    try:
        for event in client.build_image(request):
            kind = event.WhichOneof("kind")
            if kind == "log":
                log(event.log)
            elif kind == "progress":
                log(f"[{event.progress.step}/{event.progress.steps}] {event.progress.description}")
            elif kind == "done":
                if event.done.cached:
                    log(f"image {event.done.image_id[:12]} is built already")
                return event.done.image_ref
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.FAILED_PRECONDITION:
            raise ImageBuildError(e.details()) from None
        raise client.translate(e, "BuildImage") from None
    raise ImageBuildError("the build stream ended without a result: try again")
