"""Where the runner's start goes under gVisor: syscalls, and what each costs in runsc.

    $(scripts/python-test-env.sh) bench/functions/gvisor_startup.py     # root; runsc

No stack. The test image's root filesystem with the SDK byte-compiled at
/levers9/sdk (as bench/functions/startup.py prepares it) and a module with
one `@function` at /levers9/code/app.py, with the runner's PYTHONPATH
(/levers9/sdk:/levers9/code, as the controlplane sets it). Prints:

- the syscalls of `python3 -c pass` and of the runner's imports plus that
  module (what a cold call's runner loads before its first input), counted
  with `strace -f -c` in a chroot (chroot(8)'s few dozen calls included;
  skipped when strace is not installed), the five most frequent of each;
- the wall time of `runsc --rootless=false --network=none run` (the
  benches' raw runsc baseline, bench.py's RAW_RUNSC; the SDK and the code
  bind-mounted read-only from host directories, as the worker mounts them)
  of each, and of two probes that price what the imports do: 10,000
  `os.stat` calls and 1,000 opens, reads and closes of a standard-library
  file. The variants take turns, LEVERS9_BENCH_RUNS rounds (default 7);
  medians. LEVERS9_BENCH_RUNSC_FLAGS adds flags to try, e.g.
  "--file-access-mounts=exclusive".
"""

import json
import os
import statistics
import shutil
import subprocess
import sys
import tempfile
import time

from bench import RAW_RUNSC
from startup import IMPORTS, compile_sdk, unpack_root

RUNS = int(os.environ.get("LEVERS9_BENCH_RUNS", "7"))
EXTRA_FLAGS = os.environ.get("LEVERS9_BENCH_RUNSC_FLAGS", "").split()
APP = "from levers9 import function\n\n\n@function()\ndef f(x):\n    return x\n"
ENV = ["PATH=/usr/bin:/bin", "PYTHONPATH=/levers9/sdk:/levers9/code", "PYTHONDONTWRITEBYTECODE=1", "LANG=C.UTF-8"]
STATS = 10_000
OPENS = 1_000
VARIANTS = {
    "pass": "pass",
    "runner": IMPORTS + "; import app",
    "stat": f"import os\nfor _ in range({STATS}): os.stat('/usr')",
    "open": f"for _ in range({OPENS}):\n    f = open('/usr/lib/python3.11/os.py', 'rb'); f.read(); f.close()",
}


def config(code, objects):
    """A bundle's config: the test image's root, read-only, and the SDK and code mounted as the worker mounts them."""
    return {
        "ociVersion": "1.0.2",
        "process": {
            "user": {"uid": 0, "gid": 0},
            "args": ["python3", "-c", code],
            "env": ENV,
            "cwd": "/levers9/code",
            "noNewPrivileges": True,
        },
        "root": {"path": "rootfs", "readonly": True},
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]},
        ]
        + [
            {"destination": f"/levers9/{name}", "type": "bind", "source": os.path.join(objects, name), "options": ["rbind", "ro"]}
            for name in ("sdk", "code")
        ],
        "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network")]},
    }


def syscalls(root, code):
    """Total syscalls of `python3 -c code` in a chroot of root, and the five most frequent."""
    with tempfile.NamedTemporaryFile("r", prefix="l9strace.") as out:
        # chroot(8) starts python3 in /, so the code first moves to the
        # directory a container starts in ('' on sys.path is looked up there).
        subprocess.run(
            [shutil.which("strace"), "-f", "-c", "-o", out.name, shutil.which("chroot"), root, "/usr/bin/python3",
             "-c", "import os; os.chdir('/levers9/code')\n" + code],
            check=True,
            stdout=subprocess.DEVNULL,
            env=dict(kv.split("=", 1) for kv in ENV),
        )
        counts = {}
        for line in out.read().splitlines():
            fields = line.split()
            # % time, seconds, usecs/call, calls, [errors], syscall
            if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
                counts[fields[-1]] = int(fields[3])
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:5]
    return sum(counts.values()), top


def runsc_ms(bundle, code, name):
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(config(code, os.path.join(bundle, "objects")), f)
    start = time.monotonic()
    done = subprocess.run(
        [*RAW_RUNSC, *EXTRA_FLAGS, "run", name],
        cwd=bundle,
        capture_output=True,
    )
    ms = (time.monotonic() - start) * 1000
    if done.returncode != 0:
        sys.exit(f"gvisor_startup: runsc run of {code!r} failed: {done.stderr.decode()[-500:]}")
    return ms


def main():
    if shutil.which("runsc") is None:
        sys.exit("gvisor_startup: no runsc (scripts/install-test-packages.sh installs it)")
    with tempfile.TemporaryDirectory(prefix="l9gvisor.") as bundle:
        root = os.path.join(bundle, "rootfs")
        unpack_root(root)
        compile_sdk(root)
        os.makedirs(os.path.join(root, "levers9", "code"))
        with open(os.path.join(root, "levers9", "code", "app.py"), "w") as f:
            f.write(APP)
        # The chroot reads them in the root; runsc from host directories
        # bind-mounted over them, as a worker's container does.
        for name in ("sdk", "code"):
            shutil.copytree(os.path.join(root, "levers9", name), os.path.join(bundle, "objects", name))

        if shutil.which("strace"):
            print("| syscalls (strace -f -c, chroot) | calls | most frequent |")
            print("|---|---|---|")
            for what in ("pass", "runner"):
                total, top = syscalls(root, VARIANTS[what])
                print(f"| {what} | {total} | {', '.join(f'{n} {c}' for n, c in top)} |")
            print()
        else:
            print("(no strace: syscall counts skipped)\n")

        times = {what: [] for what in VARIANTS}
        for round_ in range(RUNS):
            for what, code in VARIANTS.items():
                times[what].append(runsc_ms(bundle, code, f"l9gv-{os.getpid()}-{round_}-{what}"))
        med = {what: statistics.median(ms) for what, ms in times.items()}
        print(f"| `{' '.join([*RAW_RUNSC, *EXTRA_FLAGS])} run`, median of {RUNS} | ms | over `pass` |")
        print("|---|---|---|")
        print(f"| `python3 -c pass` | {med['pass']:.0f} | |")
        print(f"| runner imports + a module with one `@function` | {med['runner']:.0f} | {med['runner'] - med['pass']:+.0f} ms |")
        stat_us = (med["stat"] - med["pass"]) * 1000 / STATS
        open_us = (med["open"] - med["pass"]) * 1000 / OPENS
        print(f"| {STATS:,} `os.stat` | {med['stat']:.0f} | {stat_us:.0f} µs per call |")
        print(f"| {OPENS:,} open + read + close of os.py | {med['open']:.0f} | {open_us:.0f} µs per file |")


if __name__ == "__main__":
    sys.exit(main())
