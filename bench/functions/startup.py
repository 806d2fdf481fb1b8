"""CPU time of the function runner's imports in a chroot of the test image.

    $(scripts/python-test-env.sh) bench/functions/startup.py     # root (chroot)

No stack: the cached root filesystem of the test and bench Python image
(scripts/push-python-image.sh builds it once, ~/.cache/levers9/
python3.11-rootfs-pyc.tar.gz; any make bench-functions leaves it there)
is unpacked to a temporary directory, the SDK object
(levers9.archive.sdk_archive(), what the worker mounts) at /levers9/sdk,
and `python3 -c "import levers9.runner.main, levers9.runner.execute"` with
/levers9/sdk on PYTHONPATH is run in a chroot of it, as a container starts
the runner. Prints the minimum CPU time (user+sys, of the process and what
it waited for) of LEVERS9_BENCH_RUNS runs (default 8) each:

- `python3 -c pass`, the baseline;
- the runner's imports with no .pyc anywhere (the image before its
  standard library was byte-compiled);
- the runner's imports on the image as it is (standard library compiled);
- and with the SDK byte-compiled too;
- and, on that tree, a module with one `@function` imported after the
  runner: what a cold call's runner loads before its first input.

Nothing writes .pyc files while timing (PYTHONDONTWRITEBYTECODE=1), as in
a container whose SDK mount is read-only.
"""

import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

from levers9.archive import sdk_archive

RUNS = int(os.environ.get("LEVERS9_BENCH_RUNS", "8"))
CACHE = os.path.join(
    os.environ.get("LEVERS9_CACHE_DIR", os.path.expanduser("~/.cache/levers9")), "python3.11-rootfs-pyc.tar.gz"
)
IMPORTS = "import levers9.runner.main, levers9.runner.execute"
# What a function's module adds when the runner imports it: the decorator
# and the settings it builds.
WITH_FUNCTION = IMPORTS + "\nfrom levers9 import function\n@function()\ndef f(x):\n    return x"


def cpu_ms(root, code):
    """Minimum user+sys CPU of RUNS runs of `python3 -c code` chrooted in root."""
    best = None
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": "/levers9/sdk", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
    for _ in range(RUNS):
        pid = os.fork()
        if pid == 0:
            try:
                os.chroot(root)
                os.chdir("/")
                os.execve("/usr/bin/python3", ["python3", "-c", code], env)
            finally:
                os._exit(127)
        _, status, usage = os.wait4(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"startup: python3 -c {code!r} failed in the chroot")
        ms = (usage.ru_utime + usage.ru_stime) * 1000
        best = ms if best is None else min(best, ms)
    return best


def remove_pyc(top):
    for path, dirs, files in os.walk(top):
        for d in [d for d in dirs if d == "__pycache__"]:
            shutil.rmtree(os.path.join(path, d))
            dirs.remove(d)
        for f in files:
            if f.endswith(".pyc"):
                os.unlink(os.path.join(path, f))


def unpack_root(root):
    """The test image's root filesystem at root, the SDK (no .pyc) at /levers9/sdk."""
    if not os.path.exists(CACHE):
        sys.exit(f"{os.path.basename(sys.argv[0])}: no {CACHE}: run make bench-functions (or scripts/push-python-image.sh) once")
    os.mkdir(root)
    subprocess.run(["tar", "-C", root, "-xzf", CACHE], check=True)
    sdk = os.path.join(root, "levers9", "sdk")
    os.makedirs(sdk)
    zipfile.ZipFile(io.BytesIO(sdk_archive().data)).extractall(sdk)
    remove_pyc(sdk)


def compile_sdk(root):
    """Byte-compiles /levers9/sdk with the image's own interpreter, as the worker does (supervisor/compiled.rs)."""
    subprocess.run(
        ["chroot", root, "/usr/bin/python3", "-m", "compileall", "-q", "/levers9/sdk"],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def main():
    with tempfile.TemporaryDirectory(prefix="l9startup.") as work:
        root = os.path.join(work, "rootfs")
        unpack_root(root)

        rows = [("`python3 -c pass` (baseline)", cpu_ms(root, "pass"))]
        compiled = cpu_ms(root, IMPORTS)
        sdk_compiled_root = os.path.join(work, "sdk-compiled")
        subprocess.run(["cp", "-a", root, sdk_compiled_root], check=True)
        compile_sdk(sdk_compiled_root)
        sdk_compiled = cpu_ms(sdk_compiled_root, IMPORTS)
        with_function = cpu_ms(sdk_compiled_root, WITH_FUNCTION)
        remove_pyc(os.path.join(root, "usr", "lib", "python3.11"))
        rows.append(("runner imports, no .pyc anywhere (the image before byte-compiling)", cpu_ms(root, IMPORTS)))
        rows.append(("runner imports, standard library byte-compiled (the image as it is)", compiled))
        rows.append(("runner imports, standard library and SDK byte-compiled", sdk_compiled))
        rows.append(("the same, and a module with one `@function` (what a cold call imports)", with_function))

    print(f"| image | CPU time (min of {RUNS}) |")
    print("|---|---|")
    for what, ms in rows:
        print(f"| {what} | {ms:.0f} ms |")


if __name__ == "__main__":
    sys.exit(main())
