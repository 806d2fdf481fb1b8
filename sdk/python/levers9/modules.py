"""Loading a user's file as a module and finding a function in it.

Shared by the container runner and ``python -m levers9 run``, so both load a
file the same way: under its file stem (never ``__main__``, so the file's
``if __name__ == "__main__":`` block does not run), with its directory on
``sys.path`` so sibling modules import as they do locally.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType


class LoadError(Exception):
    """The file cannot be loaded, or has no such function."""


class _SourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles the file from its source every time, never from
    ``__pycache__``: a .pyc is taken as current when the source's mtime (in
    whole seconds) and size match, so a file edited within the same second
    to the same size would run as it was (``levers9 deploy`` would send the
    new source with the old file's options)."""

    def get_code(self, fullname):
        return self.source_to_code(self.get_data(self.path), self.path)


def load_file(path: str) -> ModuleType:
    """Imports the file at `path` as the module named after its stem.

    An exception raised by the module's own code propagates unchanged.
    """
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise LoadError(f"{path} does not exist or is not a file")
    name = os.path.splitext(os.path.basename(path))[0]
    if not name.isidentifier():
        raise LoadError(f"{os.path.basename(path)} cannot be imported as a module: rename it to a valid Python name")
    directory = os.path.dirname(path)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    existing = sys.modules.get(name)
    if existing is not None:
        if os.path.abspath(getattr(existing, "__file__", None) or "") == path:
            return existing
        # Replacing it would break whoever imported the other module first
        # (e.g. a file named json.py would replace the standard json).
        raise LoadError(
            f"{os.path.basename(path)} has the name of the already imported module {name!r}: rename the file"
        )
    spec = importlib.util.spec_from_file_location(name, path, loader=_SourceLoader(name, path))
    if spec is None or spec.loader is None:
        raise LoadError(f"{path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Registered before running it, as a normal import does: pickles refer
    # to the module's classes by this name, and circular imports find it.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def find_attribute(module: ModuleType, qualname: str):
    """The object at `qualname` ("fn" or "Class.method") in `module`."""
    if "<locals>" in qualname:
        raise LoadError(f"{qualname} is defined inside a function; only module-level functions can be found")
    target = module
    for part in qualname.split("."):
        if not hasattr(target, part):
            raise LoadError(f"{_where(module)} has no {qualname!r}")
        target = getattr(target, part)
    return target


def _where(module: ModuleType) -> str:
    return os.path.basename(getattr(module, "__file__", None) or module.__name__)
