"""Functions the hardening tests (test_security_remote.py) run in containers:
each reports how its own container is confined.

The same probe under several configurations: a stub per function.
"""

import ctypes
import errno
import os

from levers9 import function

# The pool whose seccomp enforces, started by crates/levers9-cli/tests/function_security.rs.
STRICT_POOL = os.environ.get("LEVERS9_TEST_STRICT_POOL", "strict")


def confinement():
    """What this process may do: /proc/self/status's seccomp mode, no_new_privs
    and capability bounding set, whether the root filesystem takes a write, and
    whether syncfs(2) (refused by the hardened seccomp rules) runs."""
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status.read().splitlines() if ":" in line)
    try:
        with open("/levers9-probe", "w"):
            pass
        root = "writable"
    except OSError as error:
        root = errno.errorcode.get(error.errno, str(error.errno))
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/tmp", os.O_RDONLY)
    try:
        synced = libc.syncfs(fd) == 0
        code = ctypes.get_errno()
    finally:
        os.close(fd)
    return {
        "seccomp": fields["Seccomp"].strip(),
        "no_new_privs": fields["NoNewPrivs"].strip(),
        "capability_bounding_set": int(fields["CapBnd"], 16),
        "root": root,
        "syncfs": "ran" if synced else errno.errorcode.get(code, str(code)),
    }


@function
def as_the_pool():
    return confinement()


@function(env={"LEVERS9_SECURITY_PROFILE": "hardened"})
def hardened():
    return confinement()


@function(env={"LEVERS9_SECCOMP": "enforce"})
def seccomp_enforced():
    return confinement()


@function(pool=STRICT_POOL)
def as_the_strict_pool():
    return confinement()


@function(pool=STRICT_POOL, env={"LEVERS9_SECCOMP": "observe"})
def observing_on_the_strict_pool():
    return confinement()
