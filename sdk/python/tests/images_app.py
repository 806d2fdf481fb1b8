"""Functions that run in images built from specs (test_images.py)."""

import os
import shutil
import subprocess

from levers9 import Image, function

# A Python package and a Debian package with a program and a library.
TOOLS = Image().add_python_packages(["six"]).add_apt_packages(["jq"])

# A file made in one step and deleted in the next, and a file of the base
# image deleted: both must be gone at run time (whiteouts). The test base
# image's shell is busybox with few applets, hence python3 for the rest.
PRUNED = (
    Image()
    .add_commands(["python3 -c 'import os; os.makedirs(\"/opt/app\")'", "echo one > /opt/app/gone", "echo two > /opt/app/kept"])
    .with_env({"APP_MODE": "pruned"})
    .add_commands(["python3 -c 'import os; os.remove(\"/opt/app/gone\"); os.remove(\"/usr/bin/env\")'"])
)


@function(image=TOOLS)
def use_tools(document):
    import six

    out = subprocess.run(["jq", "-c", ".a"], input=document, capture_output=True, text=True, check=True)
    return six.__name__, out.stdout.strip()


@function(image=PRUNED)
def look_around():
    return {
        "gone": os.path.exists("/opt/app/gone"),
        "kept": open("/opt/app/kept").read().strip(),
        "env": os.path.lexists("/usr/bin/env"),
        "sh": shutil.which("sh") is not None,
        "mode": os.environ.get("APP_MODE"),
    }
