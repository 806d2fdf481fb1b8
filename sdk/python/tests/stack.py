"""The real stack that the stack test files run against, and what they
share: their marks and the SDK's connection settings.

crates/levers9-cli/tests/common/sdk.rs starts the stack (a controlplane, a
worker, the test images) and sets the LEVERS9_TEST_* variables; without
them a stack file's tests are skipped, so a plain ``pytest`` runs the unit
tests only (the Rust wrapper fails on any skip).
"""

import os

import pytest

HOST = os.environ.get("LEVERS9_TEST_CONTROLPLANE_HOST")
TOKEN = os.environ.get("LEVERS9_TEST_TOKEN")
# A token of another workspace, for the isolation tests.
OTHER_TOKEN = os.environ.get("LEVERS9_TEST_OTHER_TOKEN")
NO_STACK = "set LEVERS9_TEST_CONTROLPLANE_HOST and LEVERS9_TEST_TOKEN to run against a stack"


def marks(*needs, reason: str = NO_STACK) -> list:
    """A stack file's ``pytestmark``: marked ``stack``, skipped without the
    stack (or without any of `needs`), and run with the SDK pointed at it
    (conftest's ``stack`` fixture)."""
    return [
        pytest.mark.stack,
        pytest.mark.skipif(not (HOST and TOKEN and all(needs)), reason=reason),
        pytest.mark.usefixtures("stack"),
    ]


def connection_env() -> dict:
    """The SDK's connection settings for the stack, by variable; an empty
    value is one to leave unset."""
    env = {"LEVERS9_CONTROLPLANE_HOST": HOST or "", "LEVERS9_TOKEN": TOKEN or ""}
    for name in ("PORT", "TLS"):
        env[f"LEVERS9_CONTROLPLANE_{name}"] = os.environ.get(f"LEVERS9_TEST_CONTROLPLANE_{name}", "")
    return env
