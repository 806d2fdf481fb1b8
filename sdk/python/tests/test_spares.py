"""Spare containers (worker.spares, docs/workers.md) against a real stack:
crates/levers9-cli/tests/spares.rs starts a worker keeping one spare, on
runc and on gVisor, and names its log in LEVERS9_TEST_WORKER_LOG."""

import os
import time

import spares_app as app
import stack

WORKER_LOG = os.environ.get("LEVERS9_TEST_WORKER_LOG")

pytestmark = stack.marks(WORKER_LOG, reason="needs a worker with worker.spares: crates/levers9-cli/tests/spares.rs")


def wait_for_log(text: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with open(WORKER_LOG, encoding="utf-8", errors="replace") as f:
            if text in f.read():
                return
        assert time.monotonic() < deadline, f"the worker never logged {text!r}"
        time.sleep(0.1)


def test_a_cold_start_adopts_the_spare_with_the_calls_code_and_environment():
    assert app.first.remote() == "first"
    # The first container's start left a spare of its shape.
    wait_for_log("a spare's function runner waits for its function")
    got = app.second.remote()
    assert got["started_as_spare"], got
    assert got["greeting"] == "hi"
    assert got["secret"] == "sealed-for-the-spare"
    assert got["spare_variable"] is None
    assert got["container_id"] and not got["container_id"].startswith("spare-"), got
    assert got["stub_id"].startswith("st-"), got
    assert got["module"] == "/levers9/code/spares_app.py"
    assert got["cwd"] == "/levers9/code"
    with open(WORKER_LOG, encoding="utf-8", errors="replace") as f:
        log = f.read()
    assert "a container adopted a spare" in log
    assert got["container_id"] in log
