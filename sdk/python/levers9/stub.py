"""Turning a decorated function into a stub on the controlplane, once per process.

Before the first remote call of a function: zip the directory of the file
that defines it (the code object) and the installed SDK (the SDK object),
upload each unless the workspace already holds that digest, then
GetOrCreateStub. Everything is cached per process, so later calls cost no
round trips.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import threading
from typing import Dict, Set, Tuple

from .archive import Archive, code_archive, sdk_archive
from .callables import yields
from .client import PUT_OBJECT_TIMEOUT_SECONDS, Client
from .errors import Levers9Error
from .secret import resolve_secrets
from .v1 import function_pb2 as pb
from .v1 import volume_pb2

_lock = threading.Lock()
_code_archives: Dict[str, Archive] = {}
_sdk: Dict[str, Archive] = {}
# (controlplane address, token, digest) already known to be stored.
_stored: Set[Tuple[str, str, str]] = set()


class CodeLocation:
    """Where a function lives: the directory to ship and the file inside it."""

    def __init__(self, root: str, module_path: str, module_name: str, qualname: str):
        self.root = root
        self.module_path = module_path
        self.module_name = module_name
        self.qualname = qualname


def locate(raw_f) -> CodeLocation:
    """The code location of a plain function; Levers9Error if it cannot run remotely."""
    qualname = raw_f.__qualname__
    if "." in qualname:
        raise Levers9Error(
            f"{qualname} is defined inside a class or another function; levers9 runs "
            f"module-level functions only: move it to the top level of its file"
        )
    module = sys.modules.get(raw_f.__module__)
    path = getattr(module, "__file__", None)
    if not path:
        try:
            path = inspect.getsourcefile(raw_f)
        except TypeError:
            path = None
    if not path or not os.path.isfile(path):
        raise Levers9Error(
            f"{qualname} is not defined in a file (a REPL or notebook cell?): put it in a .py file to run it remotely"
        )
    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    module_name = raw_f.__module__
    if module_name == "__main__":
        _alias_main_as(stem, path)
        module_name = stem
    return CodeLocation(os.path.dirname(path), os.path.basename(path), module_name, qualname)


def _alias_main_as(stem: str, path: str) -> None:
    """Lets ``import stem`` find the running script.

    The container imports the script under its stem, so results that refer
    to the script's classes come back as ``stem.Class``; without the alias,
    unpickling them would import the script a second time as a new module
    with new classes. Only done when that name would import this very
    script anyway, never over another module.
    """
    if stem in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(stem)
    except (ImportError, ValueError):
        return
    if spec is not None and spec.origin and os.path.abspath(spec.origin) == path:
        sys.modules[stem] = sys.modules["__main__"]


def _code_for(root: str) -> Archive:
    with _lock:
        archive = _code_archives.get(root)
    if archive is None:
        archive = code_archive(root)
        with _lock:
            _code_archives[root] = archive
    return archive


def _sdk_object() -> Archive:
    with _lock:
        archive = _sdk.get("sdk")
    if archive is None:
        archive = sdk_archive()
        with _lock:
            _sdk["sdk"] = archive
    return archive


def ensure_stored(client: Client, archive: Archive) -> None:
    """Uploads `archive` unless the workspace already holds its digest."""
    key = (client.target.address, client.target.token, archive.digest)
    with _lock:
        if key in _stored:
            return
    head = client.call("HeadObject", pb.HeadObjectRequest(digest=archive.digest))
    if not head.exists:
        client.call(
            "PutObject",
            pb.PutObjectRequest(digest=archive.digest, data=archive.data),
            timeout=PUT_OBJECT_TIMEOUT_SECONDS,
        )
    with _lock:
        _stored.add(key)


def stub_config(config, client: Client) -> pb.StubConfig:
    for volume in config.volumes_to_create:
        volume.ensure_exists(client)
    image = config.image if isinstance(config.image, str) else config.image.build(client=client)
    return pb.StubConfig(
        image=image,
        cpu_millicores=config.cpu_millicores,
        memory_mib=config.memory_mib,
        gpu_types=list(config.gpu_types),
        gpu_count=config.gpu_count,
        retries=config.retries,
        timeout_seconds=config.timeout_seconds,
        keep_warm_seconds=config.keep_warm_seconds,
        concurrency=config.concurrency,
        env=dict(config.env),
        secrets=resolve_secrets(config.secrets, client),
        pool=config.pool,
        max_containers=config.max_containers,
        min_containers=config.min_containers,
        volumes=[volume_pb2.VolumeMount(name=name, mount_path=path) for name, path in config.volumes],
    )


def create_stub(client: Client, raw_f, config, class_parameters: bytes = b"") -> str:
    """Uploads what is missing and returns the stub id for this function and
    config; `raw_f` is a class for a ``@cls`` instance, with its pickled
    `class_parameters`."""
    location = locate(raw_f)
    code = _code_for(location.root)
    ensure_stored(client, code)
    sdk = _sdk_object()
    ensure_stored(client, sdk)
    stub = stub_config(config, client)
    # Part of the stub: the controlplane lets only a generator Run call it.
    stub.generator = yields(raw_f)
    stub.class_parameters = class_parameters
    response = client.call(
        "GetOrCreateStub",
        pb.GetOrCreateStubRequest(
            name=f"{location.module_name}.{location.qualname}",
            code_digest=code.digest,
            sdk_digest=sdk.digest,
            module_path=location.module_path,
            function_name=location.qualname,
            config=stub,
        ),
    )
    return response.stub_id
