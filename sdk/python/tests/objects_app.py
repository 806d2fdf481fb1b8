"""Functions of test_objects.py: secrets given inline or by name, and a
volume mounted by functions and filled from the caller.

The container imports this module too, where the test's environment is
absent: the inline value then differs, which is harmless because a
container never makes stubs from these decorators.
"""

import hashlib
import os

from levers9 import Secret, Volume, function

# Set by crates/levers9-cli/tests/sdk_objects.rs, which then looks for it in
# the database, Redis and the controlplane's log.
INLINE_VALUE = os.environ.get("LEVERS9_TEST_INLINE_SECRET", "inline-value-for-the-sdk-suite")
INLINE = Secret.from_dict({"L9_INLINE_A": INLINE_VALUE, "L9_INLINE_B": "second inline value"})
VOLUME = Volume.from_name("sdk-objects", mount_path="/data", create_if_missing=True)


def sha256(text):
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


@function(secrets=[INLINE], env={"L9_PLAIN": "plain"})
def env_digests(names):
    """The sha256 of each variable: a result is stored with its task, so the
    values themselves must not come back."""
    return {name: sha256(os.environ.get(name)) for name in names}


@function(secrets=[INLINE])
def processes_showing(variable):
    """The command lines of the container's processes that show the value
    of `variable`, with the value masked."""
    value = os.environ[variable]
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if value in cmdline:
            found.append(cmdline.replace(value, "<value>"))
    return found


@function(secrets=[Secret.from_name("L9_SECRET_THAT_DOES_NOT_EXIST")])
def needs_a_missing_secret():
    return "unreachable"


@function(volumes=[VOLUME])
def read_mounted(path):
    with open(os.path.join("/data", path), "rb") as f:
        return f.read()


@function(volumes=[Volume.from_name("sdk-made-for-a-mount", mount_path="/made", create_if_missing=True)])
def list_made():
    return sorted(os.listdir("/made"))
