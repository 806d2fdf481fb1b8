"""What a function container's config.json costs runc, beside the raw bundle's.

    scripts/test-servers.sh scripts/bench-functions.sh bench/functions/runc_config.py   # root

Run through scripts/bench-functions.sh (its stack, the raw bundle of the
test image in LEVERS9_BENCH_RAW_BUNDLE, the worker's state beside
LEVERS9_BENCH_WORKER_LOG). One warm call starts a function container;
its config.json, as the worker wrote it, is copied while the container
lives (its bind mounts' sources with it, since they go when it does). Then `runc run` of `python3 -c pass` on the raw bundle's root
filesystem is timed with these configs, taking turns, after one untimed
round:

- raw: the raw bundle's own (umoci's: no seccomp filter, no limits);
- worker: the function container's, its command and working directory
  replaced;
- worker, no seccomp: the same without the filter;
- worker, 32-bit ABIs too: the same with the filter also naming x86 and
  x32 (arm on arm64), as it did before it named the native one only.

Each run is cut where runc writes its pid file (created: namespaces,
cgroups, mounts, the filter loaded; the process not yet started) and where
`runc run` exits. Prints medians and ranges, ms. LEVERS9_BENCH_RUNC_ROUNDS
sets the timed rounds (default 20).
"""

import copy
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from levers9 import function

ROUNDS = int(os.environ.get("LEVERS9_BENCH_RUNC_ROUNDS", "20"))
COMPAT_ABIS = {"x86_64": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"], "aarch64": ["SCMP_ARCH_ARM"]}


@function(keep_warm_seconds=60)
def probe():
    return os.environ.get("LEVERS9_CONTAINER_ID", "")


def captured_config(container_id, work):
    """The live container's config.json, its bind mounts pointed at copies."""
    # The worker's state dir sits beside its log in the bench's directory.
    state = os.path.join(os.path.dirname(os.environ["LEVERS9_BENCH_WORKER_LOG"]), "worker")
    paths = glob.glob(f"{state}/**/bundles/{container_id}/config.json", recursive=True)
    if not paths:
        sys.exit(f"runc_config: no bundle of {container_id} under {state}")
    with open(paths[0]) as f:
        config = json.load(f)
    for n, mount in enumerate(config["mounts"]):
        if mount.get("type") != "bind":
            continue
        copy_at = os.path.join(work, f"mount{n}")
        if os.path.isdir(mount["source"]):
            # The container server's socket cannot be copied; runc needs only the directory.
            shutil.copytree(mount["source"], copy_at, ignore=lambda _, names: [x for x in names if x.endswith(".sock")])
        else:
            shutil.copy(mount["source"], copy_at)
        mount["source"] = copy_at
    return config


def variants(worker_config, raw_config, rootfs):
    worker = copy.deepcopy(worker_config)
    worker["root"] = {"path": rootfs, "readonly": False}
    worker["process"]["args"] = ["python3", "-c", "pass"]
    worker["process"]["cwd"] = "/"
    no_filter = copy.deepcopy(worker)
    no_filter["linux"].pop("seccomp", None)
    compat = copy.deepcopy(worker)
    if "seccomp" in compat["linux"]:
        compat["linux"]["seccomp"]["architectures"] += COMPAT_ABIS.get(platform.machine(), [])
    raw = dict(raw_config, root={"path": rootfs})
    return {"raw": raw, "worker": worker, "worker, no seccomp": no_filter, "worker, 32-bit ABIs too": compat}


def run_once(state, bundle, name):
    pid_file = os.path.join(bundle, "pid")
    if os.path.exists(pid_file):
        os.unlink(pid_file)
    began = time.perf_counter()
    run = subprocess.Popen(
        ["runc", "--root", state, "run", "--keep", "--bundle", bundle, "--pid-file", pid_file, name],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    while not os.path.exists(pid_file) and run.poll() is None:
        time.sleep(0.0005)
    created = time.perf_counter() - began
    _, err = run.communicate()
    ended = time.perf_counter() - began
    subprocess.run(["runc", "--root", state, "delete", "--force", name], capture_output=True)
    if run.returncode != 0:
        sys.exit(f"runc_config: {name} exited {run.returncode}: {err.decode()[-400:]}")
    return created * 1000, ended * 1000


def main():
    raw_bundle = os.environ.get("LEVERS9_BENCH_RAW_BUNDLE")
    if not raw_bundle or not os.environ.get("LEVERS9_BENCH_WORKER_LOG"):
        sys.exit("runc_config: run me through scripts/bench-functions.sh (LEVERS9_BENCH_RAW_BUNDLE, LEVERS9_BENCH_WORKER_LOG)")
    work = tempfile.mkdtemp(prefix="l9runc-")
    try:
        container_id = probe.remote()
        worker_config = captured_config(container_id, work)
        with open(os.path.join(raw_bundle, "config.json")) as f:
            raw_config = json.load(f)
        bundles = {}
        for n, (label, config) in enumerate(variants(worker_config, raw_config, os.path.join(raw_bundle, "rootfs")).items()):
            bundles[label] = os.path.join(work, f"bundle{n}")
            os.makedirs(bundles[label])
            with open(os.path.join(bundles[label], "config.json"), "w") as f:
                json.dump(config, f)
        times = {label: [] for label in bundles}
        state = os.path.join(work, "state")
        for round_ in range(ROUNDS + 1):
            for n, (label, bundle) in enumerate(bundles.items()):
                measured = run_once(state, bundle, f"l9runc-{round_}-{n}")
                if round_ > 0:
                    times[label].append(measured)
        print(f"| runc run python3 -c pass, {ROUNDS} rounds | created (pid file) p50 | range | whole run p50 | range |")
        print("|---|---|---|---|---|")
        for label, measured in times.items():
            created = [c for c, _ in measured]
            whole = [w for _, w in measured]
            print(
                f"| {label} | {statistics.median(created):.1f} ms | {min(created):.1f}–{max(created):.1f} "
                f"| {statistics.median(whole):.1f} ms | {min(whole):.1f}–{max(whole):.1f} |"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
