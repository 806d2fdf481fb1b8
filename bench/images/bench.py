"""Image build figures (scripts/bench-images.sh runs this against a stack).

Prints a markdown table: the latency of Image.build for a spec that exists
(a cache hit: one VerifyImage round trip, no container), the build time of
small specs, and the bytes a worker pulls to run a function in a second
image that shares the base image with one it already ran.
"""

import os
import statistics
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))

import apps  # noqa: E402
from levers9 import Image  # noqa: E402

BLOBS = os.environ["LEVERS9_BENCH_BLOBS"]


def blob_bytes() -> int:
    if not os.path.isdir(BLOBS):
        return 0
    return sum(os.path.getsize(os.path.join(BLOBS, name)) for name in os.listdir(BLOBS))


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def quiet(_line):
    pass


def copy(image):
    fresh = Image(image.python_version, image.base_image)
    fresh.steps = list(image.steps)
    return fresh


def main():
    rows = []
    # Warm-up: the build worker pulls the base image once.
    Image().with_env({"WARM": uuid.uuid4().hex}).add_commands(["echo warm > /warm"]).build(on_log=quiet)

    small = Image().with_env({"RUN": uuid.uuid4().hex}).add_commands(["echo hi > /hi"])
    seconds, _ = timed(lambda: small.build(on_log=quiet))
    rows.append(("build: 2 steps (env, one command)", f"{seconds:.2f} s"))

    pip = Image().with_env({"RUN": uuid.uuid4().hex}).add_python_packages(["six"])
    seconds, _ = timed(lambda: pip.build(on_log=quiet))
    rows.append(("build: pip install six", f"{seconds:.2f} s"))

    hits = []
    for _ in range(20):
        seconds, _ = timed(lambda: copy(small).build(on_log=quiet))
        hits.append(seconds * 1000)
    hits.sort()
    rows.append(("Image.build cache hit, median of 20", f"{statistics.median(hits):.1f} ms"))
    rows.append(("Image.build cache hit, p95 of 20", f"{hits[int(len(hits) * 0.95) - 1]:.1f} ms"))

    before = blob_bytes()
    apps.first.remote()
    after_first = blob_bytes()
    apps.second.remote()
    after_second = blob_bytes()
    rows.append(("worker pulls, first image (base + its layer)", f"{after_first - before:,} bytes"))
    rows.append(("worker pulls, second image sharing the base", f"{after_second - after_first:,} bytes"))

    print("| Measure | Value |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
