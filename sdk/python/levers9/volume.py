"""``Volume``: a directory of the workspace's that a function's containers mount.

    from levers9 import Volume, function

    @function(volumes=[Volume("datasets", mount_path="/data")])
    def count_lines(name):
        with open(f"/data/{name}") as f:
            return sum(1 for _ in f)

Create the volume first (``levers9 volume create datasets``) and copy files in
with ``levers9 volume cp``. What one container writes there, the next one reads,
on any worker. A workspace only ever sees its own volumes.

Like the decorator, this module imports neither grpc nor protobuf.
"""

from __future__ import annotations

import re

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


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

    def __repr__(self):
        return f"Volume({self.name!r}, mount_path={self.mount_path!r})"

    def __eq__(self, other):
        return isinstance(other, Volume) and (self.name, self.mount_path) == (other.name, other.mount_path)

    def __hash__(self):
        return hash((self.name, self.mount_path))
