"""Shared fixtures: an isolated environment, an in-process fake controlplane,
and the real stack's connection settings (see stack.py)."""

import pytest

_CONNECTION_ENV = (
    "LEVERS9_CONTROLPLANE_HOST",
    "LEVERS9_CONTROLPLANE_PORT",
    "LEVERS9_CONTROLPLANE_TLS",
    "LEVERS9_TOKEN",
    "LEVERS9_CONTEXT",
)


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No LEVERS9_* connection settings and an empty HOME (no CLI config)."""
    for name in _CONNECTION_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return monkeypatch


@pytest.fixture
def fake(clean_env):
    """A fake FunctionService on localhost, with the environment pointing at it."""
    pytest.importorskip("grpc")
    from fake_controlplane import start_server

    server, service, port = start_server()
    clean_env.setenv("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1")
    clean_env.setenv("LEVERS9_CONTROLPLANE_PORT", str(port))
    clean_env.setenv("LEVERS9_TOKEN", service.token)
    yield service
    server.stop(grace=None)


@pytest.fixture
def stack(monkeypatch):
    """The SDK pointed at the real stack (stack.py's files use it through
    their marks)."""
    from stack import connection_env

    for name, value in connection_env().items():
        if value:
            monkeypatch.setenv(name, value)
        else:
            monkeypatch.delenv(name, raising=False)
