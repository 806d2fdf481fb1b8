"""``Secret``: values a function's containers get as environment variables.

    from levers9 import Secret, function

    @function(secrets=[
        Secret.from_name("DB_PASSWORD"),         # created with `levers9 secret create`
        Secret.from_dict({"API_KEY": api_key}),  # given here, sealed like the others
        "OPENAI_API_KEY",                        # a plain name works as before
    ])
    def handler():
        ...

A workspace secret is one variable: its name is the variable's name.

``Secret.from_dict`` stores its values through the controlplane's secret
service before the function's first remote call: each variable is sealed at
rest like a named secret, under a name the controlplane derives from the
workspace, the variable and its value with a keyed digest
(``LEVERS9_INLINE_<digest>_<VARIABLE>``). The stub, its spec and its tasks
carry only those names; the values travel once, to the secret service, and
then only to the containers, as environment variables (as named secrets do).
The same values give the same names, so running a script again stores
nothing new and finds its warm containers; a new value is a new name (and a
new stub), never an overwrite of what another function uses. The stored
values stay, listed by ``levers9 secret list``; deleting one is safe, since
the next run of its caller stores it again.

Like the decorator, this module imports neither grpc nor protobuf: a
container imports the user's module (and so this one) without them.
"""

from __future__ import annotations

import re
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import Dict, List, Optional, Tuple

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What the secret service accepts (services/secret.rs).
_MAX_NAME_LEN = 128
_MAX_VALUE_BYTES = 64 * 1024
_MAX_INLINE_VALUES = 100
# Stored inline names add "LEVERS9_INLINE_" and a 24-digit digest and "_".
_MAX_INLINE_VARIABLE_LEN = _MAX_NAME_LEN - len("LEVERS9_INLINE_") - 25


def _check_variable(name, what: str, max_len: int) -> None:
    if not isinstance(name, str) or not _ENV_NAME.match(name) or len(name) > max_len:
        raise ValueError(
            f"invalid {what} {name!r}: it becomes an environment variable, so use up to {max_len} "
            "letters, digits and underscores, not starting with a digit"
        )
    if name.startswith("LEVERS9_"):
        raise ValueError(f"invalid {what} {name!r}: names starting with LEVERS9_ are reserved for levers9's own settings")


class Secret:
    """A secret of the caller's workspace, by name, or inline values to seal.

    Use `Secret.from_name` or `Secret.from_dict`; pass either in
    ``@function(secrets=[...])``.
    """

    def __init__(self, *, _name: Optional[str] = None, _values: Optional[Dict[str, str]] = None):
        if (_name is None) == (_values is None):
            raise TypeError("make a Secret with Secret.from_name(name) or Secret.from_dict({...})")
        self._name = _name
        self._values = _values
        # Stored names of inline values by controlplane (address, token): a
        # process may switch targets, and names are per workspace.
        self._stored: Dict[Tuple[str, str], Tuple[str, ...]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def from_name(name: str) -> "Secret":
        """The workspace secret `name` (``levers9 secret create NAME``).

        Nothing is looked up here: a function naming a secret its workspace
        lacks fails at its first remote call, with an error naming the
        secret and how to create it.
        """
        _check_variable(name, "secret name", _MAX_NAME_LEN)
        return Secret(_name=name)

    @staticmethod
    def from_dict(values: Dict[str, str]) -> "Secret":
        """Inline values: each key becomes an environment variable with its value.

        The values are sealed at rest by the controlplane before the first
        remote call that needs them; this object keeps them only in memory
        and never shows them (not in its ``repr`` either).
        """
        if not isinstance(values, dict) or not values:
            raise ValueError("Secret.from_dict takes a non-empty dict of variable names to string values")
        if len(values) > _MAX_INLINE_VALUES:
            raise ValueError(f"Secret.from_dict takes at most {_MAX_INLINE_VALUES} variables; got {len(values)}")
        for name, value in values.items():
            _check_variable(name, "secret variable", _MAX_INLINE_VARIABLE_LEN)
            # The messages name the variable, never the value.
            if not isinstance(value, str):
                raise ValueError(f"the value of secret variable {name} must be a string; got a {type(value).__name__}")
            size = len(value.encode("utf-8"))
            if not 1 <= size <= _MAX_VALUE_BYTES:
                raise ValueError(
                    f"the value of secret variable {name} is {size} bytes: give 1 to {_MAX_VALUE_BYTES} "
                    "(put large files in a Volume)"
                )
        return Secret(_values=dict(values))

    @property
    def name(self) -> Optional[str]:
        """The workspace secret's name; None for inline values."""
        return self._name

    @property
    def variables(self) -> Tuple[str, ...]:
        """The environment variables this secret sets in a container."""
        return (self._name,) if self._name is not None else tuple(sorted(self._values))

    def _fingerprint(self) -> str:
        """Tells inline secrets apart in this process (equality, hashing)
        without keeping a second copy of the values around."""
        import hashlib  # here, not at the top: it loads OpenSSL, which a container's runner never needs

        digest = hashlib.sha256()
        for name in sorted(self._values):
            digest.update(name.encode() + b"\0" + self._values[name].encode() + b"\0")
        return digest.hexdigest()

    def resolve(self, client) -> Tuple[str, ...]:
        """The names a stub's secrets list carries: the name itself, or the
        stored names of inline values (stored on first use per target)."""
        if self._name is not None:
            return (self._name,)
        key = (client.target.address, client.target.token)
        with self._lock:
            names = self._stored.get(key)
            if names is None:
                names = self._stored[key] = _store_inline(client, self._values)
        return names

    def __repr__(self):
        if self._name is not None:
            return f"Secret.from_name({self._name!r})"
        return f"Secret.from_dict({{{', '.join(repr(n) + ': <hidden>' for n in sorted(self._values))}}})"

    def __eq__(self, other):
        if not isinstance(other, Secret):
            return NotImplemented
        if self._name is not None or other._name is not None:
            return self._name == other._name
        return self._fingerprint() == other._fingerprint()

    def __hash__(self):
        return hash(self._name) if self._name is not None else hash(self._fingerprint())


def _store_inline(client, values: Dict[str, str]) -> Tuple[str, ...]:
    """Seals `values` through the SecretService; the names it stored them under."""
    import grpc

    from .v1 import secret_pb2, secret_pb2_grpc

    from .client import UNARY_TIMEOUT_SECONDS

    stub = client.service(secret_pb2_grpc.SecretServiceStub)
    try:
        response = stub.CreateInlineSecret(
            secret_pb2.CreateInlineSecretRequest(values=values),
            timeout=UNARY_TIMEOUT_SECONDS,
            metadata=client.metadata,
        )
    except grpc.RpcError as e:
        raise client.translate(e, "CreateInlineSecret") from None
    return tuple(response.names)


def resolve_secrets(secrets, client) -> List[str]:
    """A stub's secrets list: names as they are, inline secrets stored and
    replaced by their stored names."""
    names: List[str] = []
    for secret in secrets:
        names.extend(secret.resolve(client) if isinstance(secret, Secret) else (secret,))
    return names
