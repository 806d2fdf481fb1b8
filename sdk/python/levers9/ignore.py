"""Which files stay out of a code object: built-in skips plus `.levers9ignore`.

`.levers9ignore` sits at the root of the zipped directory and reads like a
small `.gitignore`:

- one glob per line (``fnmatch``: ``*``, ``?``, ``[abc]``; ``*`` also crosses
  ``/``), blank lines and lines starting with ``#`` are skipped;
- a pattern without ``/`` matches a file or directory name at any depth
  (``*.csv``, ``data``);
- a pattern with a leading or inner ``/`` matches the path from the root
  (``/notes.txt``, ``docs/*.md``); a leading ``**/`` means any depth;
- a trailing ``/`` matches directories only (``build/``);
- ``!`` (re-include) is not supported and is refused, so a pattern is never
  silently read as something else.
"""

from __future__ import annotations

import fnmatch
import os
from typing import List

IGNORE_FILE = ".levers9ignore"

# Never part of a function's code: caches, VCS data and environments are
# large, machine-specific, and would change the digest on every run.
ALWAYS_SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".venv", "venv", "node_modules"})
ALWAYS_SKIPPED_FILE_GLOBS = ("*.pyc",)


class _Pattern:
    def __init__(self, glob: str, anchored: bool, dir_only: bool):
        self.glob = glob
        self.anchored = anchored
        self.dir_only = dir_only

    def matches(self, rel_path: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        if self.anchored:
            return fnmatch.fnmatchcase(rel_path, self.glob)
        return fnmatch.fnmatchcase(rel_path.rsplit("/", 1)[-1], self.glob)


class IgnoreRules:
    """The rules for one directory tree; paths are relative and use ``/``."""

    def __init__(self, patterns: List[_Pattern]):
        self._patterns = patterns

    @classmethod
    def for_root(cls, root: str) -> "IgnoreRules":
        """The built-in skips plus the root's `.levers9ignore`, if any."""
        path = os.path.join(root, IGNORE_FILE)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return cls([])
        return cls(parse_ignore_file(text, path))

    def skips_dir(self, rel_path: str) -> bool:
        name = rel_path.rsplit("/", 1)[-1]
        return name in ALWAYS_SKIPPED_DIRS or any(p.matches(rel_path, True) for p in self._patterns)

    def skips_file(self, rel_path: str) -> bool:
        name = rel_path.rsplit("/", 1)[-1]
        if any(fnmatch.fnmatchcase(name, g) for g in ALWAYS_SKIPPED_FILE_GLOBS):
            return True
        return any(p.matches(rel_path, False) for p in self._patterns)


def parse_ignore_file(text: str, source: str = IGNORE_FILE) -> List[_Pattern]:
    """Parses `.levers9ignore` text; ValueError names the line it cannot read."""
    patterns = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("!"):
            raise ValueError(
                f"{source}:{number}: re-including with '!' is not supported; "
                f"narrow the patterns that exclude {line[1:]!r} instead"
            )
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if line.startswith("**/") and "/" not in line[3:]:
            # "**/name" is "name at any depth", which an unanchored glob already is.
            line, anchored = line[3:], False
        else:
            anchored = "/" in line
            line = line.lstrip("/")
        if not line:
            raise ValueError(f"{source}:{number}: {raw.strip()!r} matches nothing; remove it")
        patterns.append(_Pattern(line, anchored, dir_only))
    return patterns
