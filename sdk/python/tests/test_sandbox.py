"""Sandboxes against a real stack: exec with streamed output and stdin,
exit codes, files in and out, terminate, another workspace's id.

Needs the stack of crates/levers9-cli/tests/sandboxes.rs, which sets
LEVERS9_TEST_SANDBOXES (the image to run) and LEVERS9_TEST_OTHER_TOKEN (a
token of another workspace); skipped otherwise.
"""

import os
import time

import pytest

import stack
from levers9 import ControlplaneError, Image, Sandbox, SandboxFileError, SandboxTerminated
from stack import OTHER_TOKEN

IMAGE = os.environ.get("LEVERS9_TEST_SANDBOXES")

pytestmark = stack.marks(
    IMAGE, OTHER_TOKEN, reason="needs the stack of crates/levers9-cli/tests/sandboxes.rs (LEVERS9_TEST_SANDBOXES)"
)



@pytest.fixture(scope="module")
def sandbox():
    # Module-scoped, so before any test's own settings.
    os.environ.update({name: value for name, value in stack.connection_env().items() if value})
    sb = Sandbox.create(image=Image.from_registry(IMAGE), cpu=0.5, memory=256, timeout=300)
    yield sb
    sb.terminate()


def test_output_streams_as_it_comes_and_the_exit_code_is_returned(sandbox):
    script = "import sys, time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.5)\nprint('err', file=sys.stderr)\nsys.exit(3)"
    p = sandbox.exec("python3", "-c", script)
    seen = []
    started = time.monotonic()
    for chunk in p.stdout:
        seen.append((chunk, time.monotonic() - started))
    assert "".join(c for c, _ in seen) == "0\n1\n2\n"
    # Streamed: the first line came well before the last one.
    assert len(seen) >= 2 and seen[-1][1] - seen[0][1] >= 0.5, seen
    assert p.wait() == 3
    assert p.returncode == 3
    assert p.stderr.read() == "err\n"


def test_stdin_reaches_the_command(sandbox):
    p = sandbox.exec("python3", "-c", "import sys; data = sys.stdin.buffer.read(); print(len(data), data[:5])")
    for _ in range(40):
        p.stdin.write(b"hello" * 10000)
    p.stdin.close()
    assert p.wait() == 0
    assert p.stdout.read() == "2000000 b'hello'\n"


def test_env_and_workdir(sandbox):
    p = sandbox.exec("sh", "-c", 'echo "$GREETING $(pwd)"', env={"GREETING": "hi"}, workdir="/tmp")
    assert p.stdout.read() == "hi /tmp\n"
    assert p.wait() == 0


def test_files_go_in_and_out(sandbox, tmp_path):
    local = tmp_path / "data.bin"
    data = bytes(range(256)) * 4096
    local.write_bytes(data)
    sandbox.put_file(local, "/tmp/data.bin")
    assert sandbox.get_file("/tmp/data.bin") == data
    import hashlib

    p = sandbox.exec("python3", "-c", "import hashlib; print(hashlib.sha256(open('/tmp/data.bin', 'rb').read()).hexdigest())")
    assert p.wait() == 0
    assert p.stdout.read().strip() == hashlib.sha256(data).hexdigest()
    with pytest.raises(SandboxFileError, match="no-such-file"):
        sandbox.get_file("/tmp/no-such-file")


def test_a_missing_command_exits_nonzero(sandbox):
    p = sandbox.exec("no-such-command")
    assert p.wait() != 0


def test_exec_after_terminate_is_a_clear_error():
    with Sandbox.create(image=IMAGE, timeout=120) as sb:
        assert sb.exec("sh", "-c", "exit 0").wait() == 0
        again = Sandbox.from_id(sb.object_id)
    with pytest.raises(SandboxTerminated, match="is not running"):
        again.exec("sh", "-c", "exit 0")


def test_another_workspace_cannot_see_the_sandbox(sandbox, monkeypatch):
    monkeypatch.setenv("LEVERS9_TOKEN", OTHER_TOKEN)
    with pytest.raises(ControlplaneError) as e:
        Sandbox.from_id(sandbox.object_id)
    assert e.value.code == "NOT_FOUND"
    with pytest.raises(ControlplaneError) as e:
        Sandbox(sandbox.object_id).exec("sh", "-c", "exit 0").wait()
    assert e.value.code == "NOT_FOUND"
