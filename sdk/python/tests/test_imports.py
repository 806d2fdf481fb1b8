"""Importing the SDK must work where the runner runs: no grpc, no protobuf."""

import os
import subprocess
import sys

import pytest


def test_importing_levers9_and_the_runner_loads_neither_grpc_nor_protobuf():
    code = (
        "import sys, levers9, levers9.runner, levers9.runner.main, levers9.wire, levers9.__main__\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', 'google'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# Each costs a container's cold start milliseconds of CPU (bench/functions/
# startup.py) and a plain function needs none of them.
SLOW = ("cloudpickle", "hashlib", "datetime", "typing", "inspect", "dataclasses", "concurrent.futures",
        "logging", "traceback", "levers9.volume", "levers9.secret", "levers9.image", "levers9.classes")
PLAIN = "from levers9 import function\n\n@function(cpu=0.5, memory='256Mi')\ndef f(x):\n    return x\n"
# One with volumes and secrets loads their modules (and volume.py's
# dataclasses), still not what they use only on the caller's side.
WITH_OBJECTS = (
    "from levers9 import Secret, Volume, function\n\n"
    "@function(volumes=[Volume.from_name('data', mount_path='/data')], secrets=['db', Secret.from_name('api')])\n"
    "def f(x):\n    return x\n"
)
OBJECTS_SLOW = ("cloudpickle", "hashlib", "datetime", "typing", "concurrent.futures", "logging", "traceback",
                "levers9.image", "levers9.classes")


@pytest.mark.parametrize("source, slow", [(PLAIN, SLOW), (WITH_OBJECTS, OBJECTS_SLOW)], ids=["plain", "objects"])
def test_a_runner_starting_a_function_leaves_slow_imports_for_later(tmp_path, source, slow):
    # What a cold call waits for: the runner's modules and those of a
    # function's module (the decorator's), as `python -S` in a container
    # loads them.
    import levers9

    (tmp_path / "app_start.py").write_text(source)
    code = (
        "import sys\n"
        "from levers9.runner.main import load_function\n"
        f"fn = load_function({str(tmp_path)!r}, 'app_start.py', 'f')\n"
        "assert fn(2) == 2\n"
        f"slow = sorted(m for m in {slow!r} if m in sys.modules)\n"
        "assert not slow, slow\n"
    )
    sdk = os.path.dirname(os.path.dirname(os.path.abspath(levers9.__file__)))
    env = {**os.environ, "PYTHONPATH": sdk}
    result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr


def test_the_public_names():
    import levers9

    for name in ("function", "Function", "FunctionCall", "Image", "RemoteError", "RemoteTraceback",
                 "TaskTimeout", "TaskCancelled", "TaskFailed", "AuthError", "Levers9Error"):
        assert hasattr(levers9, name), name
    assert issubclass(levers9.TaskTimeout, levers9.Levers9Error)


def test_a_file_edited_within_the_same_second_to_the_same_size_loads_as_it_is_now(tmp_path):
    import py_compile

    source = tmp_path / "app_edit.py"
    source.write_text("X = 1\n")
    os.utime(source, (1_700_000_000, 1_700_000_000))
    # A .pyc of the first version, as an earlier import would have left it.
    py_compile.compile(str(source), doraise=True)
    source.write_text("X = 2\n")
    os.utime(source, (1_700_000_000, 1_700_000_000))
    load = f"from levers9.modules import load_file; print(load_file({str(source)!r}).X)"
    assert subprocess.run([sys.executable, "-c", load], capture_output=True, text=True, check=True).stdout == "2\n"
