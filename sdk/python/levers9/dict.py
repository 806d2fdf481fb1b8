"""``Dict``: a named key-value map of the workspace, shared by callers and containers.

    from levers9 import Dict

    d = Dict.from_name("cache", create_if_missing=True)
    d["model"] = {"version": 3}
    d["model"]                    # {'version': 3}
    d.get("missing", 0)           # 0
    d.put("k", 1, skip_if_exists=True)

Keys and values are pickled: values with cloudpickle (like function
arguments), keys with the standard pickle, so that the same key pickles to the
same bytes in every process (use str, int, bytes, or tuples of them). The
contents live in the controlplane's hot state (Redis, or memory for the
embedded install): fast and shared, but not durable storage. Limits: a key
and its value up to 1 MiB pickled, 100,000 entries per dict (the
controlplane's ``controlplane.objects`` settings); a put over a limit raises
``ControlplaneError`` and writes nothing.
"""

from __future__ import annotations

import pickle
from typing import Any, Iterator, List, Mapping, Optional, Tuple

import cloudpickle

from . import named

_MISSING = object()
# Fixed, so that every Python the SDK supports pickles a key to the same bytes.
_KEY_PROTOCOL = 4


def _key(key: Any) -> bytes:
    try:
        return pickle.dumps(key, protocol=_KEY_PROTOCOL)
    except Exception as e:  # pickling raises anything the key's __reduce__ does
        raise TypeError(f"the dict key {key!r} cannot be pickled ({type(e).__name__}: {e}); use str, int, bytes or tuples of them") from e


def _value(value: Any) -> bytes:
    try:
        return cloudpickle.dumps(value)
    except Exception as e:
        raise TypeError(f"the dict value cannot be pickled ({type(e).__name__}: {e}); store plain data") from e


class Dict:
    """A named dict of the caller's workspace; get one with ``Dict.from_name``."""

    def __init__(self, name: str, *, create_if_missing: bool = False):
        self.name = name
        self._create = create_if_missing
        self._looked_up = False

    def __repr__(self):
        return f"Dict({self.name!r})"

    @classmethod
    def from_name(cls, name: str, *, create_if_missing: bool = False) -> "Dict":
        """The dict called `name`. Lazy, as in Modal: it is looked up (and created
        with create_if_missing) on first use, where a missing one raises
        ControlplaneError with code NOT_FOUND; so a module may make one at import,
        also in a function's container."""
        return cls(name, create_if_missing=create_if_missing)

    def _backend(self):
        backend = named.backend()
        if not self._looked_up:
            backend.look_up("dict", self.name, self._create)
            self._looked_up = True
        return backend

    @staticmethod
    def delete(name: str) -> None:
        """Deletes the dict called `name` and everything in it."""
        named.backend().delete("dict", name)

    def put(self, key: Any, value: Any, *, skip_if_exists: bool = False) -> bool:
        """Sets key to value; with skip_if_exists a key already there keeps its value.
        Whether the key was new."""
        return self._backend().dict_put(self.name, [(_key(key), _value(value))], skip_if_exists) == 1

    def update(self, other: Optional[Mapping] = None, /, **kwargs: Any) -> None:
        """Sets many keys in one call, all or none."""
        items = dict(other or {}, **kwargs)
        if items:
            self._backend().dict_put(self.name, [(_key(k), _value(v)) for k, v in items.items()], False)

    def get(self, key: Any, default: Any = None) -> Any:
        value = self._backend().dict_get(self.name, _key(key))
        return default if value is None else cloudpickle.loads(value)

    def contains(self, key: Any) -> bool:
        return self._backend().dict_get(self.name, _key(key)) is not None

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """Removes key and returns its value; KeyError if missing and no default."""
        value = self._backend().dict_pop(self.name, _key(key))
        if value is None:
            if default is _MISSING:
                raise KeyError(key)
            return default
        return cloudpickle.loads(value)

    def len(self) -> int:
        return self._backend().length("dict", self.name)

    def clear(self) -> None:
        """Removes every entry; the dict stays."""
        self._backend().clear("dict", self.name)

    def keys(self) -> List[Any]:
        return [pickle.loads(k) for k, _ in self._backend().dict_entries(self.name, True)]

    def values(self) -> List[Any]:
        return [v for _, v in self.items()]

    def items(self) -> List[Tuple[Any, Any]]:
        return [(pickle.loads(k), cloudpickle.loads(v)) for k, v in self._backend().dict_entries(self.name, False)]

    def __getitem__(self, key: Any) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.pop(key)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __len__(self) -> int:
        return self.len()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())
