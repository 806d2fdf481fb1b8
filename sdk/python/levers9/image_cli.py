"""``python -m levers9.image_cli build path/file.py::image [--force-rebuild]``.

Builds the ``Image`` named ``image`` in the file (imported under its stem),
streaming the build log to stderr, and prints the image's reference by
digest. The ``levers9 image build`` command of the CLI execs this.
Exit codes: 0 built (or found built), 1 the build failed, 2 bad usage.
"""

from __future__ import annotations

import os
import sys
from typing import List

USAGE = "usage: python -m levers9.image_cli build path/to/file.py::image [--force-rebuild]"


def _fail(message: str, code: int) -> int:
    print(f"levers9: {message}", file=sys.stderr)
    return code


def build(argv: List[str]) -> int:
    from .errors import Levers9Error
    from .image import Image
    from .modules import LoadError, find_attribute, load_file

    force = "--force-rebuild" in argv
    targets = [a for a in argv if a != "--force-rebuild"]
    if len(targets) != 1 or "::" not in targets[0]:
        return _fail(USAGE, 2)
    path, _, name = targets[0].rpartition("::")
    try:
        image = find_attribute(load_file(path), name)
    except LoadError as e:
        return _fail(str(e), 2)
    if not isinstance(image, Image):
        return _fail(f"{name} in {os.path.basename(path)} is not a levers9.Image", 2)
    try:
        print(image.build(force_rebuild=force))
    except Levers9Error as e:
        return _fail(str(e), 1)
    return 0


def main(argv: List[str]) -> int:
    if not argv or argv[0] != "build":
        return _fail(USAGE, 2)
    return build(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
