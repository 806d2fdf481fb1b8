"""Checks and normalises the arguments of ``@function`` into `FunctionConfig`.

Everything is validated when the decorator runs, so a typo fails at import
time with a message naming the argument, not minutes later on a worker.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (see levers9/__init__.py)
    from typing import Dict, Tuple, Union

    from .image import Image
    from .secret import Secret
    from .volume import Volume

# This module is imported at a container's cold start (with the user's
# module), so what only some functions use is imported where it is met:
# Image, Secret and Volume by their checks, and FunctionConfig is a plain
# class (dataclasses imports inspect: ~9 ms of CPU per start).

# StubConfig's numeric fields are uint32 on the wire.
_UINT32_MAX = 2**32 - 1

_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
# Binary units only: "1G" means 10^9 bytes in Kubernetes and 2^30 in many
# people's heads, so the ambiguous decimal forms are refused rather than guessed.
_MEMORY_UNITS_MIB = {"": 1, "mi": 1, "mib": 1, "gi": 1024, "gib": 1024, "ti": 1024 * 1024, "tib": 1024 * 1024}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# Each setting of a FunctionConfig and its default.
_SETTINGS = {
    "cpu_millicores": 125,
    "memory_mib": 128,
    "gpu_types": (),
    "gpu_count": 0,
    # A reference, or an Image to build before the first call.
    "image": "",
    "retries": 0,
    "timeout_seconds": 300,
    "keep_warm_seconds": 60,
    "concurrency": 1,
    # A dict (each config gets its own empty one by default).
    "env": None,
    # Names, and inline Secrets that become names when the stub is made.
    "secrets": (),
    "pool": "",
    "max_containers": 0,
    # Containers kept running while deployed, even idle.
    "min_containers": 0,
    # (name, mount_path) of each volume.
    "volumes": (),
    # Volumes from Volume.from_name(create_if_missing=True): made, if
    # missing, before the stub is (they are not part of it, nor of equality).
    "volumes_to_create": (),
}


class FunctionConfig:
    """A function's resources and policy, ready for the wire (StubConfig).

    Frozen: `replace` makes a copy with some settings changed.
    """

    __slots__ = tuple(_SETTINGS)

    def __init__(self, **settings):
        unknown = settings.keys() - _SETTINGS.keys()
        if unknown:
            raise TypeError(f"FunctionConfig has no setting {', '.join(sorted(unknown))}")
        for name, default in _SETTINGS.items():
            value = settings.get(name, default)
            object.__setattr__(self, name, {} if name == "env" and value is None else value)

    def __setattr__(self, name, value):
        raise AttributeError(f"a FunctionConfig is frozen: use config.replace({name}=...)")

    def __delattr__(self, name):
        raise AttributeError("a FunctionConfig is frozen")

    def replace(self, **changes) -> FunctionConfig:
        return FunctionConfig(**{**self._settings(), **changes})

    def _settings(self) -> dict:
        return {name: getattr(self, name) for name in _SETTINGS}

    def _compared(self) -> tuple:
        return tuple(getattr(self, name) for name in _SETTINGS if name != "volumes_to_create")

    def __eq__(self, other):
        if type(other) is not FunctionConfig:
            return NotImplemented
        return self._compared() == other._compared()

    # It holds a dict (env): unhashable, as the dataclass it replaced was.
    __hash__ = None

    def __repr__(self) -> str:
        settings = ", ".join(f"{name}={value!r}" for name, value in self._settings().items())
        return f"FunctionConfig({settings})"

    def __reduce__(self):
        # As its settings: pickle's default sets them one by one, which a
        # frozen config refuses.
        return (_config_of, (self._settings(),))


def _config_of(settings: dict) -> FunctionConfig:
    return FunctionConfig(**settings)


def parse_cpu(cpu) -> int:
    """Cores (0.125, 1, 2.5) to millicores."""
    if isinstance(cpu, bool) or not isinstance(cpu, (int, float)):
        raise ValueError(f"cpu is a number of cores, e.g. cpu=0.5 or cpu=2; got {cpu!r}")
    millicores = round(cpu * 1000)
    if millicores < 1:
        raise ValueError(f"cpu must be at least 0.001 cores; got {cpu!r}")
    return millicores


def parse_memory(memory) -> int:
    """MiB as an int, or a string like "512Mi", "1.5Gi", "2GiB", to MiB."""
    hint = "memory is MiB as an int, or a string like '512Mi' or '2Gi'"
    if isinstance(memory, bool):
        raise ValueError(f"{hint}; got {memory!r}")
    if isinstance(memory, int):
        mib = memory
    elif isinstance(memory, str):
        match = _MEMORY.match(memory)
        unit = match.group(2).lower() if match else None
        if unit not in _MEMORY_UNITS_MIB:
            raise ValueError(f"{hint} (units Mi, Gi or Ti); got {memory!r}")
        exact = float(match.group(1)) * _MEMORY_UNITS_MIB[unit]
        if exact != int(exact):
            raise ValueError(f"memory must be a whole number of MiB; {memory!r} is {exact} MiB")
        mib = int(exact)
    else:
        raise ValueError(f"{hint}; got {memory!r}")
    if mib < 1:
        raise ValueError(f"memory must be at least 1 MiB; got {memory!r}")
    return mib


def parse_gpu(gpu, gpu_count) -> Tuple[Tuple[str, ...], int]:
    """GPU types in order of preference and how many; ((), 0) without a GPU."""
    if gpu is None:
        if gpu_count != 1:
            raise ValueError(f"gpu_count={gpu_count!r} needs a GPU type too, e.g. gpu='L40S'")
        return (), 0
    types = [gpu] if isinstance(gpu, str) else gpu
    if not isinstance(types, (list, tuple)) or not types:
        raise ValueError(f"gpu is a GPU type like 'L40S' or a list of types in order of preference; got {gpu!r}")
    cleaned = []
    for gpu_type in types:
        if not isinstance(gpu_type, str) or not gpu_type.strip():
            raise ValueError(f"every GPU type must be a non-empty string like 'H100'; got {gpu_type!r} in gpu={gpu!r}")
        cleaned.append(gpu_type.strip())
    count = _whole(gpu_count, "gpu_count", minimum=1)
    return tuple(cleaned), count


def parse_image(image) -> str:
    if image is None:
        return ""
    from .image import Image

    if isinstance(image, str):
        raise ValueError(f"image takes an Image, e.g. image=Image.from_registry({image!r})")
    if not isinstance(image, Image):
        raise ValueError(f"image must be a levers9.Image or None; got {type(image).__name__}")
    return image if image.needs_build() else image.ref


def parse_env(env) -> Dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, dict):
        raise ValueError(f"env is a dict of names to values; got {type(env).__name__}")
    for name, value in env.items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ValueError(f"env name {name!r} is not a valid environment variable name")
        if not isinstance(value, str):
            raise ValueError(f"env[{name!r}] must be a string; got {type(value).__name__}")
        if name in _SECURITY_ENV:
            _check_security_value(name, value)
        elif name.startswith("LEVERS9_"):
            # The worker sets these to wire the runner up; letting a user
            # value win would break the container in confusing ways.
            raise ValueError(
                f"env name {name!r} is reserved: names starting with LEVERS9_ are set by the worker "
                f"(a function may only set {' and '.join(_SECURITY_ENV)}, to tighten its pool's security)"
            )
    return dict(env)


# The LEVERS9_* names a function may set: each asks its worker for stricter
# container security than its pool's (docs/security.md), with the values that
# can tighten something. A value that can only loosen is refused here; one
# the pool already exceeds is refused by the worker, which knows the pool.
_SECURITY_ENV = {
    "LEVERS9_SECURITY_PROFILE": ("hardened",),
    "LEVERS9_SECCOMP": ("observe", "enforce"),
}
# Values a pool may have that a function can never ask for: they tighten nothing.
_LOOSENING = {
    "LEVERS9_SECURITY_PROFILE": ("default",),
    "LEVERS9_SECCOMP": ("off",),
}


def _check_security_value(name: str, value: str) -> None:
    allowed = _SECURITY_ENV[name]
    if value in allowed:
        return
    choices = " or ".join(repr(v) for v in allowed)
    if value.strip() in _LOOSENING[name]:
        raise ValueError(
            f"env[{name!r}] = {value!r} cannot tighten anything, and a function can never loosen its pool's "
            f"security: use {choices} for stricter containers than the pool's, or leave {name} out "
            "to run with the pool's settings"
        )
    raise ValueError(f"env[{name!r}] = {value!r} is not a value a function can ask for: use {choices}")


def parse_secrets(secrets) -> Tuple[Union[str, Secret], ...]:
    """Names, with `Secret.from_name` as its name; inline secrets
    (`Secret.from_dict`) stay objects, stored at stub creation."""
    if secrets is None:
        return ()
    from .secret import Secret

    if isinstance(secrets, (str, Secret)) or not isinstance(secrets, (list, tuple)):
        raise ValueError(
            "secrets is a list of secret names or Secret objects, e.g. "
            f"secrets=['openai', Secret.from_dict({{'KEY': value}})]; got {secrets!r}"
        )
    parsed = []
    for secret in secrets:
        if isinstance(secret, Secret):
            parsed.append(secret.name if secret.name is not None else secret)
        elif isinstance(secret, str) and secret.strip():
            parsed.append(secret)
        else:
            raise ValueError(f"every secret must be a non-empty name or a Secret; got {secret!r}")
    return tuple(parsed)


def parse_volumes(volumes) -> Tuple[Tuple[str, str], ...]:
    if volumes is None:
        return ()
    from .volume import Volume

    if not isinstance(volumes, (list, tuple)) or not all(isinstance(v, Volume) for v in volumes):
        raise ValueError(f"volumes is a list of Volume, e.g. volumes=[Volume('data', mount_path='/data')]; got {volumes!r}")
    paths = [v.mount_path.rstrip("/") for v in volumes]
    if len(set(paths)) != len(paths):
        raise ValueError(f"two volumes share a mount_path in {volumes!r}: give each its own")
    return tuple((v.name, v.mount_path) for v in volumes)


def parse_pool(pool) -> str:
    if pool is None:
        return ""
    if not isinstance(pool, str) or not pool.strip():
        raise ValueError(f"pool is the name of a worker pool or None; got {pool!r}")
    return pool


def _whole(value, name, minimum) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number; got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}; got {value}")
    if value > _UINT32_MAX:
        raise ValueError(f"{name} must be at most {_UINT32_MAX}; got {value}")
    return value


def build_config(
    cpu=0.125,
    memory="128Mi",
    gpu=None,
    gpu_count=1,
    image=None,
    retries=0,
    timeout=300,
    keep_warm_seconds=60,
    concurrency=1,
    env=None,
    secrets=None,
    pool=None,
    max_containers=None,
    volumes=None,
    min_containers=0,
) -> FunctionConfig:
    """The decorator's arguments, checked. Raises ValueError naming the bad one."""
    gpu_types, count = parse_gpu(gpu, gpu_count)
    return FunctionConfig(
        cpu_millicores=parse_cpu(cpu),
        memory_mib=parse_memory(memory),
        gpu_types=gpu_types,
        gpu_count=count,
        image=parse_image(image),
        retries=_whole(retries, "retries", minimum=0),
        timeout_seconds=_whole(timeout, "timeout (seconds)", minimum=1),
        # 0 reads as "the controlplane's default" on the wire, so it cannot
        # mean "no keep-warm"; refuse it instead of silently meaning 60.
        keep_warm_seconds=_whole(keep_warm_seconds, "keep_warm_seconds", minimum=1),
        concurrency=_whole(concurrency, "concurrency", minimum=1),
        env=parse_env(env),
        secrets=parse_secrets(secrets),
        pool=parse_pool(pool),
        max_containers=0 if max_containers is None else _whole(max_containers, "max_containers", minimum=1),
        volumes=parse_volumes(volumes),
        min_containers=_min_containers(min_containers, max_containers),
        volumes_to_create=tuple(v for v in volumes or () if v.create_if_missing),
    )



# The controlplane's max_containers when a function names none.
_DEFAULT_MAX_CONTAINERS = 100


def _min_containers(min_containers, max_containers) -> int:
    value = _whole(min_containers, "min_containers", minimum=0)
    limit = _DEFAULT_MAX_CONTAINERS if max_containers is None else max_containers
    if value > limit:
        raise ValueError(
            f"min_containers ({value}) is more than max_containers ({limit}): "
            f"lower min_containers or raise max_containers"
        )
    return value
