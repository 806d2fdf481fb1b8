"""The decorator's arguments: parsing, defaults and the errors a user reads."""

import functools
import pickle

import cloudpickle
import pytest

from levers9 import Function, Image, Period, Volume, function
from levers9.callables import yields
from levers9.resources import build_config, parse_cpu, parse_gpu, parse_memory


@pytest.mark.parametrize("cores, millicores", [(0.125, 125), (1, 1000), (2.5, 2500), (0.001, 1)])
def test_cpu_is_cores_turned_into_millicores(cores, millicores):
    assert parse_cpu(cores) == millicores


@pytest.mark.parametrize("bad", [0, -1, 0.0001, "500m", True, None])
def test_cpu_refuses_what_is_not_a_positive_number_of_cores(bad):
    with pytest.raises(ValueError, match="cpu"):
        parse_cpu(bad)


@pytest.mark.parametrize(
    "memory, mib",
    [(512, 512), ("512Mi", 512), ("1Gi", 1024), ("1.5Gi", 1536), ("2GiB", 2048), ("64", 64), ("1Ti", 1048576), (" 256 mi ", 256)],
)
def test_memory_accepts_mib_and_binary_units(memory, mib):
    assert parse_memory(memory) == mib


@pytest.mark.parametrize("bad", ["1G", "512MB", "lots", "0.5Mi", 0, -5, 1.5, True, None])
def test_memory_refuses_ambiguous_or_invalid_sizes(bad):
    with pytest.raises(ValueError, match="memory"):
        parse_memory(bad)


def test_gpu_takes_one_type_or_types_in_order_of_preference():
    assert parse_gpu(None, 1) == ((), 0)
    assert parse_gpu("L40S", 1) == (("L40S",), 1)
    assert parse_gpu(["H100", "A100"], 2) == (("H100", "A100"), 2)


@pytest.mark.parametrize(
    "gpu, count, message",
    [
        (None, 2, "gpu_count=2 needs a GPU type"),
        ([], 1, "gpu is a GPU type"),
        (["H100", ""], 1, "non-empty string"),
        ("H100", 0, "gpu_count must be at least 1"),
        (3, 1, "gpu is a GPU type"),
    ],
)
def test_gpu_errors_say_what_is_wrong(gpu, count, message):
    with pytest.raises(ValueError, match=message):
        parse_gpu(gpu, count)


def test_defaults():
    config = build_config()
    assert (config.cpu_millicores, config.memory_mib, config.gpu_types, config.gpu_count) == (125, 128, (), 0)
    assert (config.retries, config.timeout_seconds, config.keep_warm_seconds, config.concurrency) == (0, 300, 60, 1)
    assert (config.image, config.pool, config.max_containers, config.env, config.secrets) == ("", "", 0, {}, ())
    assert config.min_containers == 0


def test_a_config_is_frozen_and_replace_makes_a_changed_copy():
    config = build_config(cpu=0.5, env={"A": "1"})
    with pytest.raises(AttributeError, match=r"frozen: use config.replace\(retries=\.\.\.\)"):
        config.retries = 3
    changed = config.replace(retries=3)
    assert (changed.retries, changed.cpu_millicores, changed.env) == (3, 500, {"A": "1"})
    assert config.retries == 0
    with pytest.raises(TypeError, match="no setting retry"):
        config.replace(retry=3)


def test_configs_are_equal_by_their_settings_but_the_volumes_to_create():
    made = Volume.from_name("data", mount_path="/data", create_if_missing=True)
    assert build_config(volumes=[made]) == build_config(volumes=[Volume.from_name("data", mount_path="/data")])
    assert build_config(cpu=1) != build_config(cpu=2)
    assert build_config().env is not build_config().env, "each config gets its own env"
    assert "cpu_millicores=1000" in repr(build_config(cpu=1))


def test_a_config_pickles_as_it_is():
    config = build_config(cpu=2, env={"A": "1"}, retries=3)
    for copy in (pickle.loads(pickle.dumps(config)), cloudpickle.loads(cloudpickle.dumps(config))):
        assert copy == config and copy.env == {"A": "1"} and copy.retries == 3


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"retries": -1}, "retries must be at least 0"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": 2.5}, "timeout .* whole number"),
        ({"keep_warm_seconds": 0}, "keep_warm_seconds must be at least 1"),
        ({"concurrency": 0}, "concurrency must be at least 1"),
        ({"max_containers": 0}, "max_containers must be at least 1"),
        ({"min_containers": -1}, "min_containers must be at least 0"),
        ({"min_containers": 3, "max_containers": 2}, r"min_containers \(3\) is more than max_containers \(2\)"),
        ({"min_containers": 101}, r"min_containers \(101\) is more than max_containers \(100\)"),
        ({"env": {"A": 1}}, "must be a string"),
        ({"env": {"1A": "x"}}, "not a valid environment variable name"),
        ({"env": {"LEVERS9_FUNCTION": "x"}}, "reserved"),
        ({"env": {"LEVERS9_SECURITY_PROFILE_X": "hardened"}}, "reserved"),
        ({"env": {"LEVERS9_SECCOMP": 1}}, "must be a string"),
        ({"secrets": "db"}, "list of secret names"),
        ({"pool": ""}, "pool"),
        ({"image": "python:3.12"}, r"Image.from_registry\('python:3.12'\)"),
        ({"retries": 2**32}, "at most"),
    ],
)
def test_invalid_arguments_raise_value_errors_naming_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_config(**kwargs)


def test_image_from_registry_sets_the_reference():
    assert build_config(image=Image.from_registry("ghcr.io/acme/app:1")).image == "ghcr.io/acme/app:1"
    assert build_config(image=Image()).image == ""
    with pytest.raises(ValueError, match="image reference"):
        Image.from_registry(" ")


def test_function_works_bare_and_with_arguments_and_runs_locally():
    @function
    def double(x):
        return 2 * x

    @function(cpu=1, memory="1Gi", gpu="L40S")
    def triple(x):
        return 3 * x

    assert isinstance(double, Function) and isinstance(triple, Function)
    assert double(2) == 4 and double.local(3) == 6 and triple(1) == 3
    assert triple.config.gpu_types == ("L40S",) and triple.config.gpu_count == 1
    assert double.__name__ == "double" and double.raw_f.__qualname__.endswith("double")


def test_function_errors_fail_at_decoration_time():
    with pytest.raises(ValueError, match="memory"):

        @function(memory="lots")
        def f():
            pass

    with pytest.raises(TypeError, match="keyword arguments only"):
        function(2)

    with pytest.raises(ValueError, match="gen is a generator and has a schedule: a scheduled run has no caller"):

        @function(schedule=Period(minutes=5))
        def gen():
            yield 1


def test_a_generator_function_is_called_with_remote_gen_and_a_plain_one_is_not():
    @function
    def gen(n):
        yield from range(n)

    @function
    async def agen(n):
        yield n

    @function
    def plain(n):
        return n

    assert gen.is_generator and agen.is_generator and not plain.is_generator
    assert yields(functools.partial(gen.raw_f, 3)) and not yields(lambda: None) and not yields(len)

    class Holder:
        def items(self):
            yield 1

    assert yields(Holder().items) and yields(Holder.items)
    assert list(gen.local(3)) == [0, 1, 2]
    # Refused before anything is uploaded or any controlplane is asked.
    for call in (gen.remote, gen.spawn, agen.remote):
        with pytest.raises(TypeError, match=r"is a generator function: iterate over .*\.remote_gen\(\.\.\.\)"):
            call(1)
    with pytest.raises(TypeError, match=r"gen is a generator function: .*\.map takes a returned value"):
        gen.map([1])
    with pytest.raises(TypeError, match=r"plain is not a generator function: call it with .*plain\.remote\(\.\.\.\)"):
        plain.remote_gen(1)


def test_nested_functions_run_locally_but_refuse_remote_with_a_clear_error():
    from levers9.errors import Levers9Error
    from levers9.stub import locate

    @function
    def inner():
        return 1

    assert inner.local() == 1
    with pytest.raises(Levers9Error, match="module-level functions only"):
        locate(inner.raw_f)


def test_volumes_go_to_the_wire_as_name_and_mount_path():
    from levers9.stub import stub_config

    config = build_config(volumes=[Volume("data", mount_path="/data"), Volume("models", "/models")])
    assert config.volumes == (("data", "/data"), ("models", "/models"))
    wire = stub_config(config, client=None)  # a plain image reference needs no build
    assert [(v.name, v.mount_path) for v in wire.volumes] == [("data", "/data"), ("models", "/models")]


@pytest.mark.parametrize(
    "make",
    [
        lambda: Volume("../etc"),
        lambda: Volume("data", mount_path="data"),
        lambda: Volume("data", mount_path="/"),
        lambda: build_config(volumes=Volume("data")),
        lambda: build_config(volumes=[Volume("a", "/x"), Volume("b", "/x/")]),
    ],
)
def test_bad_volumes_are_refused_with_what_to_do(make):
    with pytest.raises(ValueError):
        make()


@pytest.mark.parametrize(
    "env",
    [
        {"LEVERS9_SECURITY_PROFILE": "hardened"},
        {"LEVERS9_SECCOMP": "enforce"},
        {"LEVERS9_SECCOMP": "observe"},
        {"LEVERS9_SECURITY_PROFILE": "hardened", "LEVERS9_SECCOMP": "enforce", "OTHER": "x"},
    ],
)
def test_a_function_can_ask_for_stricter_security_than_its_pool(env):
    assert build_config(env=env).env == env


@pytest.mark.parametrize(
    "env, message",
    [
        (
            {"LEVERS9_SECURITY_PROFILE": "default"},
            r"env\['LEVERS9_SECURITY_PROFILE'\] = 'default' cannot tighten anything, and a function can never "
            r"loosen its pool's security: use 'hardened' for stricter containers than the pool's, or leave "
            r"LEVERS9_SECURITY_PROFILE out to run with the pool's settings",
        ),
        (
            {"LEVERS9_SECCOMP": "off"},
            r"env\['LEVERS9_SECCOMP'\] = 'off' cannot tighten anything.*use 'observe' or 'enforce'",
        ),
        (
            {"LEVERS9_SECCOMP": "strict"},
            r"env\['LEVERS9_SECCOMP'\] = 'strict' is not a value a function can ask for: use 'observe' or 'enforce'",
        ),
        ({"LEVERS9_SECURITY_PROFILE": "Hardened"}, r"is not a value a function can ask for: use 'hardened'"),
    ],
)
def test_a_security_value_that_cannot_tighten_is_refused_saying_what_to_use(env, message):
    with pytest.raises(ValueError, match=message):
        build_config(env=env)


def test_other_levers9_names_stay_reserved_and_say_which_two_are_allowed():
    with pytest.raises(ValueError) as info:
        build_config(env={"LEVERS9_TOKEN": "x"})
    assert str(info.value) == (
        "env name 'LEVERS9_TOKEN' is reserved: names starting with LEVERS9_ are set by the worker "
        "(a function may only set LEVERS9_SECURITY_PROFILE and LEVERS9_SECCOMP, to tighten its pool's security)"
    )
