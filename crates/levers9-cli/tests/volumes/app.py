"""Functions of the volume tests (crates/levers9-cli/tests/volumes.rs).

Run as `python app.py COMMAND 'JSON ARGS'`; prints {"ok": value} or
{"error": "Type: message"} as one JSON line.
"""

import hashlib
import json
import os
import sys

from levers9 import Volume, function

SHARED = [Volume("shared", mount_path="/data")]


@function(volumes=SHARED, pool="a")
def write_text(name, text):
    with open(f"/data/{name}", "w") as f:
        f.write(text)
    return len(text)


@function(volumes=SHARED, pool="b")
def read_text(name):
    with open(f"/data/{name}") as f:
        return f.read()


@function(volumes=SHARED, pool="c")
def read_on_c(name):
    with open(f"/data/{name}") as f:
        return f.read()


@function(volumes=SHARED, pool="a", max_containers=4)
def write_blob(i):
    data = hashlib.sha256(str(i).encode()).digest() * 32768  # 1 MiB
    with open(f"/data/blob-{i}.bin", "wb") as f:
        f.write(data)
    return hashlib.sha256(data).hexdigest()


@function(volumes=SHARED, pool="b")
def sha256_of(name):
    with open(f"/data/{name}", "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@function(volumes=SHARED, pool="b")
def listing():
    return sorted(os.listdir("/data"))


def main():
    command = sys.argv[1]
    args = json.loads(sys.argv[2]) if len(sys.argv) > 2 else []
    try:
        if command == "write_blobs":
            result = list(write_blob.map(args))
        else:
            result = globals()[command].remote(*args)
        print(json.dumps({"ok": result}))
    except Exception as error:  # the test reads the message
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))


if __name__ == "__main__":
    main()
