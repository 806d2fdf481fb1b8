"""A function's own hardening requests against a real stack on runc
(docs/security.md, "Who decides: worker-wide < pool < stub").

Needs the stack of crates/levers9-cli/tests/function_security.rs: a runc
worker of a pool with the shipped security, and one of the pool
LEVERS9_TEST_STRICT_POOL whose seccomp enforces (requiresPoolSelector, so only
the functions naming it run there). Skipped otherwise. The functions are in
security_app.py.
"""

import os

import pytest

import security_app as app
import stack
import levers9
from levers9 import ControlplaneError, Function, Levers9Error

STRICT_POOL = os.environ.get("LEVERS9_TEST_STRICT_POOL")

pytestmark = stack.marks(
    STRICT_POOL, reason="needs the stack of crates/levers9-cli/tests/function_security.rs (LEVERS9_TEST_STRICT_POOL)"
)



def test_a_function_asking_for_hardened_runs_hardened_on_a_pool_that_is_not():
    plain = app.as_the_pool.remote()
    hardened = app.hardened.remote()
    # Every container: the baseline seccomp filter, no new privileges.
    for seen in (plain, hardened):
        assert (seen["seccomp"], seen["no_new_privs"]) == ("2", "1"), seen
    # The pool's shipped values: a writable root, runc's three capabilities,
    # the hardened seccomp rules observed (syncfs runs, the kernel logs it).
    assert plain["root"] == "writable", plain
    assert plain["capability_bounding_set"] != 0, plain
    assert plain["syncfs"] == "ran", plain
    # hardened: a read-only root, no capabilities, the rules enforced.
    assert hardened["root"] == "EROFS", hardened
    assert hardened["capability_bounding_set"] == 0, hardened
    assert hardened["syncfs"] == "EPERM", hardened


def test_a_function_asking_for_seccomp_enforce_gets_only_that():
    seen = app.seccomp_enforced.remote()
    assert seen["syncfs"] == "EPERM", seen
    assert seen["root"] == "writable", seen
    assert seen["capability_bounding_set"] != 0, seen


def test_asking_for_less_than_the_pool_fails_the_start_naming_the_pool_and_the_setting():
    # The pool does enforce...
    assert app.as_the_strict_pool.remote()["syncfs"] == "EPERM"
    # ...so asking it to only observe is refused, not quietly overruled.
    with pytest.raises(Levers9Error) as info:
        app.observing_on_the_strict_pool.remote()
    assert (
        f"the container for observing_on_the_strict_pool failed to start: LEVERS9_SECCOMP=observe asks "
        f"for less than pool {STRICT_POOL}'s seccomp (enforce): a stub can only tighten its pool's "
        "security; remove LEVERS9_SECCOMP or set it to enforce"
    ) in str(info.value)


def test_a_value_that_cannot_tighten_is_refused_by_the_sdk_and_by_the_controlplane():
    with pytest.raises(ValueError, match="cannot tighten anything"):
        levers9.function(env={"LEVERS9_SECCOMP": "off"})(app.confinement)
    # A client that skips the SDK's check: the controlplane refuses the stub.
    for env, message in [
        ({"LEVERS9_SECCOMP": "off"}, "use LEVERS9_SECCOMP=observe or enforce"),
        ({"LEVERS9_SECURITY_PROFILE": "default"}, "use LEVERS9_SECURITY_PROFILE=hardened"),
        ({"LEVERS9_STUB_ID": "st-other"}, "env name LEVERS9_STUB_ID is reserved"),
    ]:
        unchecked = Function(app.as_the_pool.raw_f, app.as_the_pool.config.replace(env=env))
        with pytest.raises(ControlplaneError, match=message) as info:
            unchecked.remote()
        assert info.value.code == "INVALID_ARGUMENT"
