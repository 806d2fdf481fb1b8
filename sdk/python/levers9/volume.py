"""``Volume``: a directory of the workspace's that a function's containers mount,
and whose files a caller reads and writes from anywhere.

    from levers9 import Volume, function

    vol = Volume.from_name("datasets", mount_path="/data", create_if_missing=True)
    vol.put_file("lines.txt", "/lines.txt")          # like `levers9 volume cp lines.txt datasets:/lines.txt`

    @function(volumes=[vol])
    def count_lines(name):
        with open(f"/data/{name}") as f:
            return sum(1 for _ in f)

    for entry in vol.iterdir("/"):                   # like `levers9 volume ls datasets`
        print(entry.path, entry.type, entry.size, entry.modified_at)
    data = vol.read_file("/lines.txt")               # like `levers9 volume cp datasets:/lines.txt .`
    vol.remove_file("/lines.txt")                    # like `levers9 volume rm datasets /lines.txt`

``Volume("datasets", mount_path="/data")`` still names a volume to mount. What
one container writes there, the next one reads, on any worker. A workspace
only ever sees its own volumes.

The file methods use the controlplane's VolumeService, the calls of
``levers9 volume cp/ls/rm``, with the same semantics: files move in parts of
64 MiB, each its own call, so no call runs into a deadline; a part that
fails on the connection is tried again from where the controlplane stands;
an upload appears under its name only once complete, and its sha256 is
checked against the local bytes. Unlike the CLI, ``put_file`` never resumes
an upload that another call left unfinished: it cannot know those bytes came
from the same file, so it starts the file over.

Like the decorator, this module imports neither grpc nor protobuf at import
time: a container imports the user's module (and so this one) without them.
"""

from __future__ import annotations

import io
import os
import re
import threading
import time
from dataclasses import dataclass

from .errors import ControlplaneError

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import BinaryIO, Iterator, List, Optional, Union

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_MIB = 1024 * 1024
# As the CLI (commands/volume/transfer.rs): one call's worth, well within a
# deadline on any link that moves a few MiB/s, sent as 1 MiB messages.
_SEGMENT_BYTES = 64 * _MIB
_CHUNK_BYTES = _MIB
# Tries of one part before giving up, with a second more between each.
_ATTEMPTS = 5
# One part of 64 MiB at a slow but working 0.25 MiB/s.
_PART_TIMEOUT_SECONDS = 300.0
# Failures of the connection or the controlplane, not of the request.
_RETRYABLE = ("UNAVAILABLE", "UNKNOWN", "DEADLINE_EXCEEDED", "CANCELLED", "ABORTED")


class VolumeNotFound(ControlplaneError):
    """The workspace has no volume of that name."""

    def __init__(self, message):
        super().__init__(message, code="NOT_FOUND")


class VolumeFileNotFound(ControlplaneError, FileNotFoundError):
    """The volume has no file or directory at that path (also a FileNotFoundError)."""

    def __init__(self, message):
        super().__init__(message, code="NOT_FOUND")


@dataclass(frozen=True)
class FileEntry:
    """A file or directory of a volume, as ``levers9 volume ls`` shows it."""

    # Relative to the volume's root, e.g. "models/a.bin".
    path: str
    # "file" or "dir", the CLI's TYPE column.
    type: str
    # Bytes; 0 for a directory (the CLI shows "-").
    size: int
    # Seconds since the epoch.
    mtime: float
    # RFC 3339, the CLI's MODIFIED column.
    modified_at: str

    @property
    def is_dir(self) -> bool:
        return self.type == "dir"


def _mtime(rfc3339: str) -> float:
    """Seconds since the epoch of the controlplane's RFC 3339 times, which
    carry nanoseconds (more digits than datetime parses on older Pythons)."""
    if not rfc3339:
        return 0.0
    match = re.match(r"^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", rfc3339)
    if not match:
        return 0.0
    base, fraction, zone = match.groups()
    import datetime  # here and below, not at the top: a container imports this module for a function's volumes and needs neither

    moment = datetime.datetime.fromisoformat(base + ("+00:00" if zone == "Z" else zone))
    return moment.timestamp() + (float(fraction) if fraction else 0.0)


class Volume:
    """A volume of the caller's workspace, by name, and where containers see it."""

    def __init__(self, name: str, mount_path: str = "/data"):
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(
                f"invalid volume name {name!r}: use 1 to 63 letters, digits, '-', '_' or '.', "
                "starting with a letter or digit"
            )
        if not isinstance(mount_path, str) or not mount_path.startswith("/") or mount_path == "/" or ".." in mount_path.split("/"):
            raise ValueError(f"mount_path must be an absolute path such as /data; got {mount_path!r}")
        self.name = name
        self.mount_path = mount_path
        self._create_if_missing = False
        # Whether the volume is known to exist on a target (address, token).
        self._known = set()
        self._lock = threading.Lock()

    @staticmethod
    def from_name(name: str, mount_path: str = "/data", create_if_missing: bool = False) -> "Volume":
        """The workspace's volume `name`, mounted at `mount_path` by functions.

        Nothing is called here (a container imports this module too): the
        volume is looked up, and with ``create_if_missing=True`` created, on
        the first file call, `hydrate`, or the first remote call of a
        function that mounts it. A volume that does not exist makes
        those calls raise `VolumeNotFound`, saying how to create it.
        """
        volume = Volume(name, mount_path)
        volume._create_if_missing = bool(create_if_missing)
        return volume

    @property
    def create_if_missing(self) -> bool:
        """Whether the first use creates the volume (`from_name`)."""
        return self._create_if_missing

    def hydrate(self) -> "Volume":
        """Checks the volume exists (creating it with ``create_if_missing``); returns it."""
        self._ensure(self._client())
        return self

    def ensure_exists(self, client) -> None:
        """`hydrate` on `client`'s controlplane: what making the stub of a
        function that mounts this volume does first."""
        self._ensure(client)

    def read_file(self, path: str) -> bytes:
        """The whole content of the file at `path` in the volume."""
        return b"".join(self.iter_file(path))

    def read_file_into_fileobj(self, path: str, fileobj: BinaryIO) -> int:
        """Writes the file at `path` into `fileobj`, part by part; returns the bytes written."""
        written = 0
        for chunk in self.iter_file(path):
            fileobj.write(chunk)
            written += len(chunk)
        return written

    def iter_file(self, path: str) -> Iterator[bytes]:
        """The file at `path`, in chunks of up to 1 MiB, as DownloadFile streams them.

        Raises `VolumeFileNotFound` for a missing file and IsADirectoryError
        for a directory. A part cut off by the connection is read again from
        where it stopped.
        """
        from .v1 import volume_pb2

        client = self._client()
        entry = self._file_entry(client, path)
        total, offset = entry.size, 0
        while offset < total:
            before = offset
            for attempt in range(1, _ATTEMPTS + 1):
                request = volume_pb2.DownloadFileRequest(volume=self.name, path=path, offset=offset, length=_SEGMENT_BYTES)
                stream = self._stub(client).DownloadFile(request, timeout=_PART_TIMEOUT_SECONDS, metadata=client.metadata)
                try:
                    for message in stream:
                        offset += len(message.data)
                        yield message.data
                    break
                except Exception as e:  # grpc.RpcError, imported lazily
                    self._retry_or_raise(client, e, "DownloadFile", path, attempt)
            if offset == before:
                raise ControlplaneError(
                    f"{self.name}:{path} ended at byte {offset}, before its size of {total}: "
                    "it changed while being read; read it again",
                    code="DATA_LOSS",
                )

    def iterdir(self, path: str = "/") -> Iterator[FileEntry]:
        """The entries of the directory at `path` (its root by default), by path;
        for a file, the file itself: what ``levers9 volume ls VOLUME PATH`` lists."""
        yield from self.listdir(path)

    def listdir(self, path: str = "/") -> List[FileEntry]:
        """`iterdir` as a list."""
        from .v1 import volume_pb2

        client = self._client()
        response = self._call(client, "ListFiles", volume_pb2.ListFilesRequest(volume=self.name, path=path), path)
        return [
            FileEntry(
                path=e.path,
                type="dir" if e.is_dir else "file",
                size=0 if e.is_dir else e.size,
                mtime=_mtime(e.modified_at),
                modified_at=e.modified_at,
            )
            for e in response.entries
        ]

    def put_file(self, local: Union[str, os.PathLike, BinaryIO, bytes], remote_path: str) -> int:
        """Writes a local file (a path, a binary file object, or bytes) to
        `remote_path` in the volume, replacing what is there; a remote path
        ending in ``/`` keeps the local file's name, as ``levers9 volume cp``
        does. Returns the bytes written, once the stored sha256 matches."""
        source, close, name = _open_source(local)
        try:
            if not remote_path or remote_path.endswith("/"):
                if not name:
                    raise ValueError(f"remote_path {remote_path!r} names a directory, and a file object or bytes has no name to keep: give the file's path")
                remote_path = f"{remote_path}{name}"
            return self._upload(source, remote_path)
        finally:
            if close:
                source.close()

    def remove_file(self, path: str, recursive: bool = False) -> None:
        """Removes the file at `path`; a directory and what is in it only with ``recursive=True``."""
        from .v1 import volume_pb2

        client = self._client()
        request = volume_pb2.RemoveFileRequest(volume=self.name, path=path, recursive=recursive)
        self._call(client, "RemoveFile", request, path)

    def _upload(self, source: BinaryIO, remote_path: str) -> int:
        from .v1 import volume_pb2

        client = self._client()
        start_at = source.tell()
        source.seek(0, io.SEEK_END)
        total = source.tell() - start_at
        # Offset 0 truncates whatever partial upload another call left; once
        # a part is answered, what the controlplane holds is this call's.
        offset, attempt, answer, truncated = 0, 1, None, False
        while answer is None or not answer.complete:
            end = min(offset + _SEGMENT_BYTES, total)
            source.seek(start_at + offset)
            requests = _part_requests(source, volume_pb2.UploadStart(volume=self.name, path=remote_path, offset=offset, total_size=total), end - offset)
            try:
                answer = self._stub(client).UploadFile(requests, timeout=_PART_TIMEOUT_SECONDS, metadata=client.metadata)
            except Exception as e:  # grpc.RpcError, imported lazily
                self._retry_or_raise(client, e, "UploadFile", remote_path, attempt)
                attempt += 1
                answer = None
                request = volume_pb2.UploadOffsetRequest(volume=self.name, path=remote_path)
                held = self._call(client, "UploadOffset", request, remote_path).offset
                if truncated and offset <= held <= total:
                    offset = held
                else:
                    offset, truncated = 0, False
                continue
            truncated = True
            if not answer.complete and answer.size <= offset:
                raise ControlplaneError(f"the upload of {self.name}:{remote_path} made no progress past byte {offset}", code="DATA_LOSS")
            offset = answer.size
        source.seek(start_at)
        import hashlib

        digest = hashlib.sha256()
        for chunk in iter(lambda: source.read(_CHUNK_BYTES), b""):
            digest.update(chunk)
        if digest.hexdigest() != answer.sha256:
            raise ControlplaneError(
                f"{self.name}:{remote_path} was stored with sha256 {answer.sha256}, but the local bytes have "
                f"{digest.hexdigest()}: the file changed while it was sent, or another upload of the same "
                "path ran at the same time; put it again",
                code="DATA_LOSS",
            )
        return total

    # The plumbing: a client, the volume made sure of, errors made clear.

    def _client(self):
        from .client import get_client

        return get_client()

    def _stub(self, client):
        from .v1 import volume_pb2_grpc

        self._ensure(client)
        return client.service(volume_pb2_grpc.VolumeServiceStub)

    def _ensure(self, client) -> None:
        """Makes sure the volume exists on the client's target, once per target."""
        from .v1 import volume_pb2, volume_pb2_grpc

        key = (client.target.address, client.target.token)
        with self._lock:
            if key in self._known:
                return
        if not self._exists(client):
            if not self._create_if_missing:
                raise self._missing_volume()
            stub = client.service(volume_pb2_grpc.VolumeServiceStub)
            try:
                stub.CreateVolume(volume_pb2.CreateVolumeRequest(name=self.name), timeout=30.0, metadata=client.metadata)
            except Exception as e:  # grpc.RpcError
                # Another process created it meanwhile: fine; anything else is not.
                if not self._exists(client):
                    raise client.translate(e, "CreateVolume") from None
        with self._lock:
            self._known.add(key)

    def _exists(self, client) -> bool:
        import grpc

        from .v1 import volume_pb2, volume_pb2_grpc

        stub = client.service(volume_pb2_grpc.VolumeServiceStub)
        try:
            names = stub.ListVolumes(volume_pb2.ListVolumesRequest(), timeout=30.0, metadata=client.metadata).names
        except grpc.RpcError as e:
            raise client.translate(e, "ListVolumes") from None
        return self.name in names

    def _missing_volume(self) -> VolumeNotFound:
        return VolumeNotFound(
            f"volume {self.name!r} does not exist in this workspace: create it with "
            f"`levers9 volume create {self.name}` or Volume.from_name({self.name!r}, create_if_missing=True)"
        )

    def _call(self, client, method: str, request, path: str):
        """A unary VolumeService call on `path`, with clear errors."""
        stub = self._stub(client)
        try:
            return getattr(stub, method)(request, timeout=30.0, metadata=client.metadata)
        except Exception as e:  # grpc.RpcError
            raise self._error(client, e, method, path) from None

    def _error(self, client, error, method: str, path: str):
        import grpc

        if not isinstance(error, grpc.RpcError):
            return error
        if error.code() == grpc.StatusCode.NOT_FOUND:
            # The volume was there when this Volume first checked; it may be
            # gone since: say which of the two is missing.
            if not self._exists(client):
                with self._lock:
                    self._known.clear()
                return self._missing_volume()
            return VolumeFileNotFound(
                f"no file or directory {path!r} in volume {self.name!r}: see what is there with "
                f"Volume.from_name({self.name!r}).iterdir('/') or `levers9 volume ls {self.name}`"
            )
        if error.code() == grpc.StatusCode.INVALID_ARGUMENT:
            details = error.details() or ""
            if method == "RemoveFile" and "is a directory" in details:
                # The controlplane words it for the CLI (--recursive).
                return IsADirectoryError(
                    f"{self.name}:{path} is a directory: remove_file({path!r}, recursive=True) removes it and what is in it"
                )
            return ValueError(f"{method} on {self.name}:{path}: {details}")
        return client.translate(error, method)

    def _retry_or_raise(self, client, error, method: str, path: str, attempt: int) -> None:
        """After a failed part: waits when it is worth another try, else raises."""
        import grpc

        code = error.code().name if isinstance(error, grpc.RpcError) and error.code() else ""
        if code not in _RETRYABLE or attempt >= _ATTEMPTS:
            raise self._error(client, error, method, path) from None
        time.sleep(attempt)

    def _file_entry(self, client, path: str) -> FileEntry:
        """The entry of the file at `path`; IsADirectoryError for a directory (as the CLI)."""
        entries = self.listdir(path)
        wanted = "/".join(p for p in path.split("/") if p not in ("", "."))
        if len(entries) == 1 and not entries[0].is_dir and entries[0].path == wanted:
            return entries[0]
        raise IsADirectoryError(f"{self.name}:{path} is a directory: read the files in it one by one (see iterdir)")

    def __repr__(self):
        return f"Volume({self.name!r}, mount_path={self.mount_path!r})"

    def __eq__(self, other):
        return isinstance(other, Volume) and (self.name, self.mount_path) == (other.name, other.mount_path)

    def __hash__(self):
        return hash((self.name, self.mount_path))


def _open_source(local):
    """(a seekable binary file, whether to close it, the name to keep)."""
    if isinstance(local, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(local)), True, None
    if isinstance(local, (str, os.PathLike)):
        path = os.fspath(local)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path} is not a file: put files one by one")
        return open(path, "rb"), True, os.path.basename(path)
    if hasattr(local, "read"):
        name = os.path.basename(getattr(local, "name", "") or "") or None
        seekable = getattr(local, "seekable", lambda: False)()
        if seekable:
            return local, False, name
        # The size must be known before the first byte goes (UploadStart).
        return io.BytesIO(local.read()), True, name
    raise TypeError(f"put_file takes a local path, a binary file object or bytes; got {type(local).__name__}")


def _part_requests(source: BinaryIO, start, length: int):
    """The request stream of one part: its start, then `length` bytes of `source` in chunks."""
    from .v1 import volume_pb2

    yield volume_pb2.UploadFileRequest(start=start)
    left = length
    while left > 0:
        data = source.read(min(_CHUNK_BYTES, left))
        if not data:
            return  # the answer then shows no progress, and _upload says so
        left -= len(data)
        yield volume_pb2.UploadFileRequest(data=data)
