"""Deterministic zips: the code object of a directory and the SDK object.

Objects are stored by digest, so the same tree must give the same bytes on
every run and every machine, or each run would upload again and start new
containers. Hence: sorted entries, a fixed timestamp (1980-01-01, the zip
epoch), fixed permissions (0644, or 0755 for executables), no directory
entries and no platform-specific extra fields.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import zipfile
from typing import Iterable, List, Optional, Tuple

from .errors import Levers9Error
from .ignore import IgnoreRules

# Code objects travel in one PutObject message (256 MiB gRPC limit) and are
# unpacked for every container; past 100 MiB it is almost always a data
# directory or an environment that slipped in, not code.
MAX_CODE_OBJECT_BYTES = 100 * 1024 * 1024

_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
_UNIX = 3  # ZipInfo.create_system for Unix, so the mode bits are read back.


class Archive:
    """Zip bytes and their digest (``sha256:<hex>``)."""

    def __init__(self, data: bytes):
        self.data = data
        self.digest = "sha256:" + hashlib.sha256(data).hexdigest()

    def __repr__(self):
        return f"Archive({self.digest}, {len(self.data)} bytes)"


class ArchiveTooLarge(Levers9Error):
    """A code object over `MAX_CODE_OBJECT_BYTES`."""


def collect_tree(root: str, rules: Optional[IgnoreRules] = None) -> List[Tuple[str, str]]:
    """(relative posix path, absolute path) of every file to ship, sorted."""
    rules = rules if rules is not None else IgnoreRules.for_root(root)
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        # Pruning in place stops os.walk from descending into skipped dirs.
        dirnames[:] = [d for d in dirnames if not rules.skips_dir(rel_dir + d)]
        for name in filenames:
            rel = rel_dir + name
            full = os.path.join(dirpath, name)
            # Regular files and links to them only: sockets, fifos and broken
            # links have no content to ship.
            if os.path.isfile(full) and not rules.skips_file(rel):
                found.append((rel, full))
    found.sort()
    return found


def build_zip(entries: Iterable[Tuple[str, str]], limit: Optional[int] = None, what: str = "archive") -> Archive:
    """A deterministic zip of (name in zip, file path) entries, sorted by name."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arcname, path in sorted(entries):
            try:
                with open(path, "rb") as f:
                    data = f.read()
                executable = os.stat(path).st_mode & 0o111
            except OSError as e:
                raise Levers9Error(
                    f"cannot read {path} for the {what}: {e.strerror}; "
                    f"fix its permissions or list it in .levers9ignore"
                ) from e
            info = zipfile.ZipInfo(arcname, date_time=_ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = _UNIX
            info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
            zf.writestr(info, data)
            if limit is not None and buffer.tell() > limit:
                raise ArchiveTooLarge(
                    f"the {what} is over {limit // (1024 * 1024)} MiB (stopped at {arcname}); "
                    f"list data, environments and build output in a .levers9ignore file "
                    f"at the root of the directory, or move the function's file to a smaller directory"
                )
    return Archive(buffer.getvalue())


def code_archive(root: str) -> Archive:
    """The code object of `root`: every file not skipped by the ignore rules."""
    files = collect_tree(root)
    return build_zip(files, limit=MAX_CODE_OBJECT_BYTES, what=f"code object of {root}")


def sdk_archive() -> Archive:
    """The installed levers9 package and cloudpickle, both at the zip root.

    Unpacked at /levers9/sdk on PYTHONPATH it lets any image with a Python 3
    run ``python -m levers9.runner``. The generated gRPC stubs (``v1``) stay
    out: the runner speaks the plain socket protocol, not gRPC.
    """
    import cloudpickle

    import levers9

    entries = []
    for package, skipped_top in ((levers9, {"v1"}), (cloudpickle, set())):
        package_dir = os.path.dirname(os.path.abspath(package.__file__))
        name = os.path.basename(package_dir)
        for rel, full in collect_tree(package_dir, IgnoreRules([])):
            if rel.split("/", 1)[0] not in skipped_top:
                entries.append((f"{name}/{rel}", full))
    return build_zip(entries, what="SDK object")
