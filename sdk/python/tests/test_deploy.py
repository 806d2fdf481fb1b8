"""Deployed apps against a real levers9 stack: ``python -m levers9 deploy``
(what ``levers9 deploy`` runs) in one process, ``Function.lookup`` in others
that have no access to the deployed file.

Runs only against a stack, like test_remote.py; the other-workspace check
also needs LEVERS9_TEST_OTHER_TOKEN (a token of a second workspace).
"""

import os
import shutil
import subprocess
import sys
import textwrap
import uuid

import pytest

import levers9

HOST = os.environ.get("LEVERS9_TEST_CONTROLPLANE_HOST")
TOKEN = os.environ.get("LEVERS9_TEST_TOKEN")
OTHER_TOKEN = os.environ.get("LEVERS9_TEST_OTHER_TOKEN")
SDK = os.path.dirname(os.path.dirname(os.path.abspath(levers9.__file__)))

pytestmark = [
    pytest.mark.stack,
    pytest.mark.skipif(not (HOST and TOKEN), reason="set LEVERS9_TEST_CONTROLPLANE_HOST and LEVERS9_TEST_TOKEN to run against a stack"),
]

APP = """
from levers9 import function

@function
def greet(name):
    return "{greeting}, " + name

@function
def shout(text):
    return text.upper()
"""

LOOKUP = """
import sys
import levers9
f = levers9.Function.lookup(sys.argv[1], sys.argv[2])
print(f.version, f.remote("ada"))
print(list(f.map(["x", "y"])))
print(f.spawn("bob").get())
"""


def python(args, cwd, token=None):
    """Runs the SDK's Python in a fresh process, connected as the tests are."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEVERS9_")}
    env["PYTHONPATH"] = SDK
    env["LEVERS9_CONTROLPLANE_HOST"] = HOST
    env["LEVERS9_TOKEN"] = token or TOKEN
    for name in ("PORT", "TLS"):
        value = os.environ.get(f"LEVERS9_TEST_CONTROLPLANE_{name}")
        if value:
            env[f"LEVERS9_CONTROLPLANE_{name}"] = value
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def deploy(tmp_path, app_name, greeting):
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    (code / "greeter.py").write_text(APP.format(greeting=greeting))
    done = python(["-m", "levers9", "deploy", str(code / "greeter.py"), "--name", app_name], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # The caller's copy is gone: lookups get the code from the deployment only.
    shutil.rmtree(code)
    return done.stdout


def lookup(tmp_path, app_name, function_name, token=None):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    return python(["-c", LOOKUP, app_name, function_name], cwd=elsewhere, token=token)


def test_a_deployed_function_is_called_by_name_and_a_redeploy_runs_the_new_code(tmp_path):
    app = f"greeter-{uuid.uuid4().hex[:8]}"

    first = deploy(tmp_path, app, "hello")
    assert first.startswith(f"deployed app {app} version 1\n"), first
    assert "  greet  " in first and "  shout  " in first
    called = lookup(tmp_path, app, "greet")
    assert called.returncode == 0, called.stderr
    assert called.stdout.splitlines() == ["1 hello, ada", "['hello, x', 'hello, y']", "hello, bob"]

    second = deploy(tmp_path, app, "bonjour")
    assert second.startswith(f"deployed app {app} version 2\n"), second
    called = lookup(tmp_path, app, "greet")
    assert called.returncode == 0, called.stderr
    assert called.stdout.splitlines()[0] == "2 bonjour, ada"


def test_an_unknown_deployment_is_not_found_with_what_to_do(tmp_path):
    missing = lookup(tmp_path, "no-such-app", "greet")
    assert missing.returncode != 0
    assert "NOT_FOUND" in missing.stderr and "levers9 deploy" in missing.stderr, missing.stderr


@pytest.mark.skipif(not OTHER_TOKEN, reason="needs LEVERS9_TEST_OTHER_TOKEN")
def test_another_workspace_cannot_look_up_a_deployment(tmp_path):
    app = f"private-{uuid.uuid4().hex[:8]}"
    deploy(tmp_path, app, "hi")
    theirs = lookup(tmp_path, app, "greet", token=OTHER_TOKEN)
    assert theirs.returncode != 0
    assert f'no function "greet" in a deployed app "{app}" of this workspace' in theirs.stderr, theirs.stderr


def test_deploying_a_file_without_functions_says_what_to_do(tmp_path):
    (tmp_path / "empty.py").write_text("x = 1\n")
    done = python(["-m", "levers9", "deploy", str(tmp_path / "empty.py")], cwd=tmp_path)
    assert done.returncode == 1
    assert "defines no levers9 function" in done.stderr, done.stderr
