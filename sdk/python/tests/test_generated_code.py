"""The checked-in gRPC stubs are what scripts/gen-proto.sh makes from /proto today."""

import filecmp
import os
import subprocess
import sys

import pytest

SDK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(SDK, "scripts", "gen-proto.sh")
CHECKED_IN = os.path.join(SDK, "levers9", "v1")


def _pinned_version():
    with open(SCRIPT) as f:
        for line in f:
            if line.startswith("GRPCIO_TOOLS_VERSION="):
                return line.split("=", 1)[1].strip().strip('"')
    raise AssertionError("GRPCIO_TOOLS_VERSION not found in gen-proto.sh")


def _generated(directory):
    return sorted(n for n in os.listdir(directory) if n.endswith(("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")))


def test_checked_in_stubs_match_the_protos(tmp_path):
    pytest.importorskip("grpc_tools")
    from importlib.metadata import version

    installed, pinned = version("grpcio-tools"), _pinned_version()
    assert installed == pinned, (
        f"grpcio-tools {installed} is installed but the stubs are generated with {pinned}: "
        f"pip install grpcio-tools=={pinned} (or pip install -e 'sdk/python[dev]')"
    )
    subprocess.run(["bash", SCRIPT, str(tmp_path)], check=True, env={**os.environ, "PYTHON": sys.executable})
    fresh = os.path.join(tmp_path, "levers9", "v1")
    assert _generated(fresh) == _generated(CHECKED_IN), "run sdk/python/scripts/gen-proto.sh"
    _, mismatch, errors = filecmp.cmpfiles(fresh, CHECKED_IN, _generated(fresh), shallow=False)
    assert not mismatch and not errors, f"stale stubs {mismatch + errors}: run sdk/python/scripts/gen-proto.sh"
