"""Which controlplane and token the SDK uses: CLI config file, context, environment."""

import os

import pytest

from levers9.config import NOT_CONFIGURED, resolve_target
from levers9.errors import ConfigError

CONFIG = '''
current = "home"

[contexts.home]
host = "cp.home"
port = 1993
tls = false
token = "home-token"

[contexts.prod]
host = "cp.example.com"
port = 443
token = "prod-token"

[contexts.private]
host = "cp.internal"
port = 1993
tls = true
ca_file = "/etc/levers9/ca.pem"
token = "private-token"
'''


@pytest.fixture
def home(tmp_path):
    (tmp_path / ".levers9").mkdir()
    (tmp_path / ".levers9" / "config.toml").write_text(CONFIG)
    return {"HOME": str(tmp_path)}


def test_the_current_context_is_used(home):
    target = resolve_target(home)
    assert (target.host, target.port, target.tls, target.token) == ("cp.home", 1993, False, "home-token")
    assert "context 'home'" in target.token_source and target.address == "cp.home:1993"


def test_levers9_context_picks_another_and_port_443_means_tls(home):
    target = resolve_target({**home, "LEVERS9_CONTEXT": "prod"})
    assert (target.host, target.port, target.tls, target.token) == ("cp.example.com", 443, True, "prod-token")


def test_an_unknown_context_lists_the_known_ones(home):
    with pytest.raises(ConfigError, match="contexts: home, private, prod"):
        resolve_target({**home, "LEVERS9_CONTEXT": "staging"})


def test_the_environment_overrides_the_context(home):
    env = {
        **home,
        "LEVERS9_CONTROLPLANE_HOST": "10.0.0.5",
        "LEVERS9_CONTROLPLANE_PORT": "2000",
        "LEVERS9_CONTROLPLANE_TLS": "1",
        "LEVERS9_TOKEN": "env-token",
    }
    target = resolve_target(env)
    assert (target.host, target.port, target.tls, target.token) == ("10.0.0.5", 2000, True, "env-token")
    assert target.token_source == "the token in LEVERS9_TOKEN"


def test_the_environment_alone_is_enough(tmp_path):
    target = resolve_target({"HOME": str(tmp_path), "LEVERS9_CONTROLPLANE_HOST": "cp", "LEVERS9_TOKEN": "t"})
    assert (target.host, target.port, target.tls) == ("cp", 1993, False)


def test_a_token_alone_means_this_machine_like_the_cli(tmp_path):
    assert resolve_target({"HOME": str(tmp_path), "LEVERS9_TOKEN": "t"}).host == "localhost"


def test_nothing_configured_says_how_to_configure(tmp_path):
    with pytest.raises(ConfigError) as info:
        resolve_target({"HOME": str(tmp_path)})
    assert str(info.value) == NOT_CONFIGURED
    assert "levers9 up" in NOT_CONFIGURED and "LEVERS9_CONTROLPLANE_HOST" in NOT_CONFIGURED


def test_a_host_without_a_token_asks_for_one(tmp_path):
    with pytest.raises(ConfigError, match="no token .* LEVERS9_TOKEN"):
        resolve_target({"HOME": str(tmp_path), "LEVERS9_CONTROLPLANE_HOST": "cp"})


def test_a_bad_port_or_file_is_a_clear_error(home, tmp_path):
    with pytest.raises(ConfigError, match="not a port number"):
        resolve_target({**home, "LEVERS9_CONTROLPLANE_PORT": "http"})
    path = os.path.join(home["HOME"], ".levers9", "config.toml")
    with open(path, "w") as f:
        f.write("current = \n")
    with pytest.raises(ConfigError, match="not a readable CLI config"):
        resolve_target(home)


def test_ipv6_hosts_are_bracketed_in_the_address(tmp_path):
    target = resolve_target({"HOME": str(tmp_path), "LEVERS9_CONTROLPLANE_HOST": "::1", "LEVERS9_TOKEN": "t"})
    assert target.address == "[::1]:1993"


def test_a_private_ca_comes_from_the_context_or_the_environment(home):
    target = resolve_target({**home, "LEVERS9_CONTEXT": "private"})
    assert (target.tls, target.ca_file) == (True, "/etc/levers9/ca.pem")
    target = resolve_target({**home, "LEVERS9_CONTEXT": "private", "LEVERS9_CONTROLPLANE_CA": "/tmp/other.pem"})
    assert target.ca_file == "/tmp/other.pem"
    assert resolve_target(home).ca_file is None


def test_an_unreadable_or_non_pem_ca_file_is_a_clear_error(home, tmp_path):
    pytest.importorskip("grpc")
    from levers9.client import Client

    missing = resolve_target({**home, "LEVERS9_CONTEXT": "private", "LEVERS9_CONTROLPLANE_CA": str(tmp_path / "no.pem")})
    with pytest.raises(ConfigError, match="cannot read the controlplane CA file"):
        Client(missing)
    (tmp_path / "ca.txt").write_text("hello")
    not_pem = resolve_target({**home, "LEVERS9_CONTEXT": "private", "LEVERS9_CONTROLPLANE_CA": str(tmp_path / "ca.txt")})
    with pytest.raises(ConfigError, match="holds no PEM certificate"):
        Client(not_pem)


def test_an_edited_config_file_is_read_again_even_within_one_tick(home):
    path = os.path.join(home["HOME"], ".levers9", "config.toml")
    assert resolve_target(home).token == "home-token"
    # Same size, written at once: only the racy-window re-read sees it.
    with open(path, "w") as f:
        f.write(CONFIG.replace("home-token", "next-token"))
    assert resolve_target(home).token == "next-token"
    # An old file is parsed once, then kept while it stays the same...
    os.utime(path, (1_000_000_000, 1_000_000_000))
    first = resolve_target(home)
    with open(path, "r+") as f:
        text = f.read().replace("next-token", "last-token")
        f.seek(0)
        f.write(text)
    os.utime(path, (1_000_000_000, 1_000_000_000))
    # ...so a same-size rewrite that kept its mtime is not seen (as git's
    # index would not), while a real edit, which moves the mtime, is.
    assert resolve_target(home).token == first.token == "next-token"
    os.utime(path, (1_000_000_100, 1_000_000_100))
    assert resolve_target(home).token == "last-token"
