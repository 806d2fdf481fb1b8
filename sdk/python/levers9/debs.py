"""Debian packages for images without apt (run by the builder in a build container).

Resolves packages and their ``Depends``/``Pre-Depends`` against one Debian
suite's ``Packages`` index, downloads each ``.deb`` from the mirror, checks
its sha256 against the index, and unpacks its data archive into ``/`` the
way ``dpkg-deb -x`` does. Limits: no maintainer scripts run and no dpkg
database is written; ``Priority: required`` packages are taken to be in the
image already; alternatives take their first choice; version constraints
are not checked (the suite has one version of each package); data archives
must be xz, gzip or uncompressed (not zstd). A dependency whose files
are all in the image already, with the same sizes, is taken as installed. The index is not signature
checked: point ``LEVERS9_APT_MIRROR`` at an https mirror you trust.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import platform
import tarfile
import urllib.request
from typing import Callable, Dict, List

DROPPED = ("./usr/share/doc/", "./usr/share/man/", "./usr/share/info/", "./usr/share/locale/")


class AptError(Exception):
    """A package cannot be resolved, fetched or unpacked."""


def _arch() -> str:
    machine = platform.machine()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def _fetch(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=300) as r:
            return r.read()
    except OSError as e:
        raise AptError(f"cannot fetch {url}: {e}") from None


def parse_index(text: str) -> Dict[str, Dict[str, str]]:
    """Package name -> its fields; virtual names map to a provider too."""
    packages: Dict[str, Dict[str, str]] = {}
    provided: Dict[str, Dict[str, str]] = {}
    for stanza in text.split("\n\n"):
        fields: Dict[str, str] = {}
        key = None
        for line in stanza.splitlines():
            if line.startswith((" ", "\t")) and key:
                fields[key] += "\n" + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        name = fields.get("Package")
        if not name:
            continue
        packages.setdefault(name, fields)
        for virtual in fields.get("Provides", "").split(","):
            virtual = virtual.split("(")[0].strip()
            if virtual:
                provided.setdefault(virtual, fields)
    for virtual, fields in provided.items():
        packages.setdefault(virtual, fields)
    return packages


def resolve(names: List[str], index: Dict[str, Dict[str, str]]) -> List[Dict[str, str]]:
    """The packages to unpack: `names` and what they depend on, minus required ones."""
    chosen: Dict[str, Dict[str, str]] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        fields = index.get(name)
        if fields is None:
            if name in names:
                raise AptError(f"no package {name!r} in the index: check the name (apt-cache search)")
            continue
        real = fields["Package"]
        if real in chosen or (fields.get("Priority") == "required" and name not in names):
            continue
        chosen[real] = fields
        for field in ("Pre-Depends", "Depends"):
            for group in fields.get(field, "").split(","):
                first = group.split("|")[0].split("(")[0].split(":")[0].strip()
                if first:
                    todo.append(first)
    return [chosen[k] for k in sorted(chosen)]


def data_archive(deb: bytes) -> tarfile.TarFile:
    """The data.tar.* member of an ar archive, opened."""
    if not deb.startswith(b"!<arch>\n"):
        raise AptError("not a .deb (no ar header)")
    offset = 8
    while offset + 60 <= len(deb):
        header = deb[offset : offset + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        body = deb[offset + 60 : offset + 60 + size]
        offset += 60 + size + (size % 2)
        if name.startswith("data.tar"):
            if name.endswith(".xz"):
                body = lzma.decompress(body)
            elif name.endswith(".zst"):
                raise AptError("the package's data is zstd-compressed, which the builder cannot unpack")
            return tarfile.open(fileobj=io.BytesIO(body), mode="r:*")
    raise AptError("the .deb has no data.tar member")


def _present(members: List[tarfile.TarInfo]) -> bool:
    """Whether the image has every file of a package, sizes alike: a
    dependency already there (the image has no dpkg database to ask)."""
    for member in members:
        if member.isfile():
            try:
                if os.lstat("/" + member.name.removeprefix("./")).st_size != member.size:
                    return False
            except OSError:
                return False
    return True


def install(names: List[str], say: Callable[[str], None]) -> None:
    mirror = os.environ.get("LEVERS9_APT_MIRROR", "http://deb.debian.org/debian").rstrip("/")
    suite = os.environ.get("LEVERS9_APT_SUITE", "bookworm")
    url = f"{mirror}/dists/{suite}/main/binary-{_arch()}/Packages.xz"
    say(f"apt: reading {url}")
    index = parse_index(lzma.decompress(_fetch(url)).decode("utf-8", "replace"))
    packages = resolve(names, index)
    say("apt: unpacking " + " ".join(f"{p['Package']}={p.get('Version', '?')}" for p in packages))
    for fields in packages:
        deb = _fetch(f"{mirror}/{fields['Filename']}")
        if hashlib.sha256(deb).hexdigest() != fields.get("SHA256"):
            raise AptError(f"{fields['Filename']} does not match the sha256 of the index")
        with data_archive(deb) as tar:
            members = [m for m in tar.getmembers() if not m.name.startswith(DROPPED)]
            if fields["Package"] not in names and _present(members):
                say(f"apt: {fields['Package']} is in the image already")
                continue
            kwargs = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
            tar.extractall("/", members=members, **kwargs)
