"""A sandbox: a container to run commands in, one after another.

    LEVERS9_SANDBOX_IMAGE=registry.example.com/python@sha256:… python examples/sandbox.py

See docs/sandboxes.md.
"""

import os
import tempfile

from levers9 import Image, Sandbox

IMAGE = os.environ.get("LEVERS9_SANDBOX_IMAGE", "python:3.12-slim")


def main():
    with Sandbox.create(image=Image.from_registry(IMAGE), cpu=0.5, memory=512, timeout=300) as sb:
        print("sandbox", sb.object_id)
        p = sb.exec("python3", "-c", "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(1)")
        for chunk in p.stdout:
            print(chunk, end="")
        print("exit code", p.wait())

        p = sb.exec("wc", "-w")
        p.stdin.write("three little words")
        p.stdin.close()
        print("words:", p.stdout.read().strip())

        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write("print('hello from a file')\n")
        sb.put_file(f.name, "/tmp/hello.py")
        print(sb.exec("python3", "/tmp/hello.py").stdout.read(), end="")
        print(sb.get_file("/tmp/hello.py").decode(), end="")


if __name__ == "__main__":
    main()
