"""Which controlplane to call, and with which token.

The same rules as the levers9 CLI, so a script runs wherever ``levers9`` works:

1. ``~/.levers9/config.toml``: ``current = "name"`` and ``[contexts.name]``
   tables with ``host``, ``port``, ``tls``, ``ca_file``, ``token``. ``LEVERS9_CONTEXT``
   picks a context other than the current one.
2. ``LEVERS9_CONTROLPLANE_HOST``, ``LEVERS9_CONTROLPLANE_PORT``,
   ``LEVERS9_CONTROLPLANE_TLS`` (``true``/``1``), ``LEVERS9_CONTROLPLANE_CA``
   and ``LEVERS9_TOKEN`` override the context's values.

TLS is used when the context or the environment asks for it, or on port 443.
``ca_file`` (or ``LEVERS9_CONTROLPLANE_CA``) names a PEM file of the CA that
signed the controlplane's certificate, for a private CA.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

from .errors import ConfigError

DEFAULT_PORT = 1993

NOT_CONFIGURED = (
    "no levers9 controlplane configured: run `levers9 up` (local) or `levers9 config create NAME`, "
    "or set LEVERS9_CONTROLPLANE_HOST and LEVERS9_TOKEN"
)


@dataclass(frozen=True)
class Target:
    """A controlplane address and token; `token_source` says where the token came from."""

    host: str
    port: int
    tls: bool
    token: str
    token_source: str = ""
    ca_file: Optional[str] = None

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"{host}:{self.port}"


def config_path(environ: Mapping[str, str]) -> str:
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".levers9", "config.toml")


# The parsed config file, kept while its inode, mtime and size stay: a `.remote()` looks
# the target up on every call, and parsing the TOML each time was a large
# part of a warm call's client CPU. An edited file has a new mtime or size;
# as git does with its index, a file changed in the last seconds is read
# again, since two writes within one timestamp tick share an mtime.
_RACY_NS = 2_000_000_000
_parsed: Dict[str, Tuple[Tuple[int, int, int], Optional[dict]]] = {}


def _load_toml(path: str) -> Optional[dict]:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError:
        st = None
    version = None
    if st is not None and time.time_ns() - st.st_mtime_ns > _RACY_NS:
        version = (st.st_ino, st.st_mtime_ns, st.st_size)
    cached = _parsed.get(path)
    if version is not None and cached is not None and cached[0] == version:
        return cached[1]
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.9/3.10 only
        import tomli as tomllib
    try:
        with open(path, "rb") as f:
            parsed = tomllib.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:  # TOMLDecodeError is a ValueError
        raise ConfigError(f"{path} is not a readable CLI config ({e}): fix it, or recreate it with `levers9 config create NAME`") from e
    if version is not None:
        _parsed[path] = (version, parsed)
    return parsed


def _env(environ: Mapping[str, str], name: str) -> Optional[str]:
    value = environ.get(name)
    return value if value else None


def _context(file: dict, path: str, name: str, explicit: bool) -> Optional[dict]:
    contexts = file.get("contexts") or {}
    context = contexts.get(name) if isinstance(contexts, dict) else None
    if context is None:
        if explicit:
            names = ", ".join(sorted(contexts)) if isinstance(contexts, dict) and contexts else "none"
            raise ConfigError(f"LEVERS9_CONTEXT={name!r} is not a context in {path} (contexts: {names}); see `levers9 config list`")
        return None
    if not isinstance(context, dict):
        raise ConfigError(f"[contexts.{name}] in {path} is not a table: fix it with `levers9 config create {name}`")
    return context


def resolve_target(environ: Optional[Mapping[str, str]] = None) -> Target:
    """The controlplane to use now. Raises ConfigError saying what to set."""
    environ = os.environ if environ is None else environ
    path = config_path(environ)
    file = _load_toml(path)
    host, port, tls, token, token_source = "", DEFAULT_PORT, False, "", ""
    ca_file: Optional[str] = None
    if file is not None:
        explicit = _env(environ, "LEVERS9_CONTEXT")
        name = explicit or file.get("current") or ""
        context = _context(file, path, name, bool(explicit)) if name else None
        if context is not None:
            host = str(context.get("host") or "")
            port = context.get("port") or DEFAULT_PORT
            tls = context.get("tls") is True
            ca_file = str(context["ca_file"]) if context.get("ca_file") else None
            token = str(context.get("token") or "")
            token_source = f"the token of context {name!r} in {path}"

    env_host = _env(environ, "LEVERS9_CONTROLPLANE_HOST")
    env_token = _env(environ, "LEVERS9_TOKEN")
    if env_host:
        host = env_host
    elif not host and env_token:
        # As the CLI does: a token alone means a controlplane on this machine.
        host = "localhost"
    if not host:
        raise ConfigError(NOT_CONFIGURED)
    env_port = _env(environ, "LEVERS9_CONTROLPLANE_PORT")
    if env_port:
        port = env_port
    try:
        port = int(port)
        if not 0 < port < 65536:
            raise ValueError
    except (TypeError, ValueError):
        raise ConfigError(f"controlplane port {port!r} is not a port number (LEVERS9_CONTROLPLANE_PORT or the context's port)") from None
    if (_env(environ, "LEVERS9_CONTROLPLANE_TLS") or "").lower() in ("true", "1"):
        tls = True
    ca_file = _env(environ, "LEVERS9_CONTROLPLANE_CA") or ca_file
    if env_token:
        token, token_source = env_token, "the token in LEVERS9_TOKEN"
    if not token:
        raise ConfigError(
            f"no token for the controlplane at {host}:{port}: set LEVERS9_TOKEN, "
            f"or save one with `levers9 config create NAME`"
        )
    return Target(
        host=host, port=port, tls=tls or port == 443, token=token, token_source=token_source, ca_file=ca_file
    )
