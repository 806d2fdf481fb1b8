"""Which container image a function runs in, and how to build one.

``Image()`` is the controlplane's base Python image. Steps added to an image
(packages, commands, environment, files) make a spec; the controlplane
builds each spec once, on the build pool, and identifies it by the sha256
of the spec with its base image resolved to a digest, so the same spec is
never built twice (see docs/images.md).
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import Callable, Dict, Iterable, List, Optional

FORCE_REBUILD_ENV = "LEVERS9_FORCE_REBUILD"


def _strings(values, what: str) -> List[str]:
    if isinstance(values, str):
        values = [values]
    out = [v.strip() for v in values if isinstance(v, str)]
    if len(out) != len(list(values)) or not out or any(not v for v in out):
        raise ValueError(f"{what} takes a non-empty list of strings; got {values!r}")
    return out


class Image:
    """A container image for a function.

    ``Image(python_version="3.11")`` starts from the base Python image of that
    version; ``Image(base_image="python:3.11")`` from any image with a
    ``python3`` in the configured base image registry. ``Image.from_registry``
    names an existing image. Each ``add_*``/``with_env`` returns a new image
    with one more step; steps run in the order they were added.
    """

    def __init__(self, python_version: str = "", base_image: str = ""):
        for name, value in (("python_version", python_version), ("base_image", base_image)):
            if not isinstance(value, str) or any(c.isspace() for c in value):
                raise ValueError(f"{name} must be a string without whitespace; got {value!r}")
        self.python_version = python_version
        self.base_image = base_image
        self.steps: List[dict] = []
        self._files: Dict[str, bytes] = {}
        # Empty means "the configured base image" on the wire (StubConfig.image).
        self.ref = ""

    @classmethod
    def from_registry(cls, ref: str) -> "Image":
        """An image from a registry, by reference (``name:tag`` or ``name@sha256:...``)."""
        if not isinstance(ref, str) or not ref.strip():
            raise ValueError(f"Image.from_registry needs an image reference like 'python:3.12-slim'; got {ref!r}")
        if any(c.isspace() for c in ref.strip()):
            raise ValueError(f"image reference {ref!r} contains whitespace")
        image = cls()
        image.ref = ref.strip()
        image.base_image = ref.strip()
        return image

    def _with(self, step: dict, files: Optional[Dict[str, bytes]] = None) -> "Image":
        image = Image(self.python_version, self.base_image)
        image.steps = self.steps + [step]
        image._files = dict(self._files, **(files or {}))
        return image

    def add_python_packages(self, packages: Iterable[str] = (), requirements_file: Optional[str] = None) -> "Image":
        """pip-installs requirement specifiers (``"six"``, ``"numpy>=2"``), or those of a requirements file."""
        packages = list(packages) if not isinstance(packages, str) else [packages]
        if requirements_file is not None:
            with open(requirements_file) as f:
                for line in f:
                    line = line.split("#", 1)[0].strip()
                    if line:
                        packages.append(line)
        return self._with({"kind": "pip", "packages": _strings(packages, "add_python_packages")})

    def add_apt_packages(self, packages: Iterable[str]) -> "Image":
        """Debian packages and their dependencies, unpacked without maintainer scripts (docs/images.md)."""
        return self._with({"kind": "apt", "packages": _strings(packages, "add_apt_packages")})

    def add_commands(self, commands: Iterable[str]) -> "Image":
        """Shell commands, run in order with ``/bin/sh -c``; the first to fail fails the build."""
        return self._with({"kind": "run", "commands": _strings(commands, "add_commands")})

    def with_env(self, env: Dict[str, str]) -> "Image":
        """Environment variables for the later steps and for functions in the image."""
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise ValueError(f"with_env takes a dict of strings; got {env!r}")
        return self._with({"kind": "env", "env": dict(env)})

    def add_local_files(self, src: str, dest: str) -> "Image":
        """Copies a local file (to the path ``dest``) or directory (into ``dest``) into the image."""
        from .archive import build_zip, collect_tree
        from .ignore import IgnoreRules

        if not isinstance(dest, str) or not dest.startswith("/"):
            raise ValueError(f"add_local_files needs an absolute destination; got {dest!r}")
        if os.path.isfile(src):
            archive = build_zip([(".levers9-file", src)], what="image files")
        elif os.path.isdir(src):
            archive = build_zip(collect_tree(src, IgnoreRules([])), what="image files")
        else:
            raise ValueError(f"add_local_files: {src!r} is neither a file nor a directory")
        return self._with({"kind": "files", "digest": archive.digest, "dest": dest}, {archive.digest: archive.data})

    def needs_build(self) -> bool:
        return bool(self.steps) or (not self.ref and bool(self.python_version or self.base_image))

    def spec(self) -> str:
        """The spec as the controlplane reads it (JSON)."""
        return json.dumps(
            {"python_version": self.python_version, "base_image": self.base_image, "steps": self.steps},
            sort_keys=True,
        )

    def build(self, force_rebuild: bool = False, on_log: Optional[Callable[[str], None]] = None, client=None) -> str:
        """Builds the image unless it exists; returns its reference by digest.

        The build log goes to ``on_log`` (default: stderr). ``force_rebuild``
        (or ``LEVERS9_FORCE_REBUILD=1``) builds again from the base image.
        """
        from . import imagebuild

        force = force_rebuild or os.environ.get(FORCE_REBUILD_ENV, "") not in ("", "0", "false")
        if not self.needs_build() or (self.ref and not force):
            return self.ref
        log = on_log or (lambda line: print(line, file=sys.stderr, flush=True))
        built = imagebuild.build(self, force, log, client)
        self.ref = built
        return built

    def image_id(self, client=None) -> str:
        """The content address of this spec (asks the controlplane to resolve the base image)."""
        from . import imagebuild

        return imagebuild.verify(self, client).image_id

    def __eq__(self, other):
        return isinstance(other, Image) and other.spec() == self.spec() and other.ref == self.ref

    def __hash__(self):
        return hash((self.spec(), self.ref))

    def __repr__(self):
        if self.steps:
            return f"Image({self.spec()})"
        return f"Image.from_registry({self.ref!r})" if self.ref else "Image()"
