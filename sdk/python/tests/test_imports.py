"""Importing the SDK must work where the runner runs: no grpc, no protobuf."""

import subprocess
import sys


def test_importing_levers9_and_the_runner_loads_neither_grpc_nor_protobuf():
    code = (
        "import sys, levers9, levers9.runner, levers9.runner.main, levers9.wire, levers9.__main__\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', 'google'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_public_names():
    import levers9

    for name in ("function", "Function", "FunctionCall", "Image", "RemoteError", "RemoteTraceback",
                 "TaskTimeout", "TaskCancelled", "TaskFailed", "AuthError", "Levers9Error"):
        assert hasattr(levers9, name), name
    assert issubclass(levers9.TaskTimeout, levers9.Levers9Error)
