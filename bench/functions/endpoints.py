"""Web endpoint benchmark against a running stack; prints a table.

Run through scripts/bench-functions.sh (``make bench-endpoints``), which
starts the stack and sets LEVERS9_BENCH_HTTP to the controlplane's HTTP
listener. Deploys one private ``@endpoint`` (an echo, concurrency 100) and
measures, on its one warm container:
- a warm ``.remote()`` of the same function (the same stub and container);
- a warm JSON POST to ``/endpoint/<workspace>/bench-echo`` with a token,
  over one kept-alive HTTP/1.1 connection (``http.client``);
- requests/s with CONCURRENCY clients, each its own connection, for
  LOAD_REQUESTS requests in all (bounded: a fixed count, loopback only).
Both single-caller measures alternate in blocks, so drift on the shared
cores hits both alike.
"""

import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse

WARM_UP = 300
CALLS = int(os.environ.get("LEVERS9_BENCH_WARM_CALLS", "1000"))
BLOCK = 100
LOAD_REQUESTS = int(os.environ.get("LEVERS9_BENCH_LOAD_REQUESTS", "5000"))
CONCURRENCY = int(os.environ.get("LEVERS9_BENCH_CONCURRENCY", "16"))

APP = """
from levers9 import endpoint

@endpoint(name="bench-echo", keep_warm_seconds=300, concurrency=100)
def echo(x):
    return {"x": x}
"""


def pct(samples, p):
    samples = sorted(samples)
    return samples[min(len(samples) - 1, int(len(samples) * p / 100))]


def row(measure, samples):
    print(
        f"| {measure} | {len(samples)} | {pct(samples, 50):.2f} ms | {pct(samples, 99):.2f} ms "
        f"| {statistics.mean(samples):.2f} ms |"
    )


class Poster:
    """POSTs JSON over one kept-alive connection."""

    def __init__(self, url, token):
        parts = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        self.conn.connect()
        # Loopback requests are small: no Nagle delay on the request's two writes.
        import socket

        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.path = parts.path
        self.headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}

    def post(self, x):
        self.conn.request("POST", self.path, body=json.dumps({"x": x}), headers=self.headers)
        response = self.conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"{response.status}: {body!r}")
        return json.loads(body)["x"]


def main():
    from levers9.client import get_client
    from levers9.deployment import deploy
    from levers9.modules import load_file
    from levers9.v1 import workspace_pb2, workspace_pb2_grpc

    base = os.environ["LEVERS9_BENCH_HTTP"]
    code = tempfile.mkdtemp(prefix="l9-endpoint-bench-")
    path = os.path.join(code, "web.py")
    with open(path, "w") as f:
        f.write(APP)
    module = load_file(path)
    deploy(module, "bench-web")
    client = get_client()
    import grpc

    # The bench's stack is plain loopback (scripts/bench-functions.sh).
    with grpc.insecure_channel(client.target.address) as channel:
        workspace = (
            workspace_pb2_grpc.WorkspaceServiceStub(channel)
            .GetWorkspace(
                workspace_pb2.GetWorkspaceRequest(), metadata=(("authorization", f"Bearer {client.target.token}"),)
            )
            .workspace.name
        )
    url = f"{base}/endpoint/{workspace}/bench-echo"
    echo = module.echo
    poster = Poster(url, client.target.token)

    echo.remote(0)  # a warm container
    for i in range(WARM_UP):
        echo.remote(i)
        poster.post(i)
    remote, endpoint = [], []
    for block in range(CALLS // BLOCK):
        for samples, call in ((remote, lambda i: echo.remote(i)["x"]), (endpoint, poster.post)):
            for i in range(BLOCK):
                start = time.perf_counter()
                assert call(i) == i
                samples.append((time.perf_counter() - start) * 1000)
    print("| measure | n | p50 | p99 | mean |")
    print("|---|---|---|---|---|")
    row("warm .remote() round trip", remote)
    row("warm JSON endpoint round trip (POST, token, kept-alive connection)", endpoint)
    print(f"\np50 difference (endpoint - .remote()): {pct(endpoint, 50) - pct(remote, 50):+.2f} ms\n")

    per_client = LOAD_REQUESTS // CONCURRENCY
    latencies = []
    lock = threading.Lock()
    errors = []

    def load():
        mine = []
        try:
            p = Poster(url, client.target.token)
            for i in range(per_client):
                start = time.perf_counter()
                p.post(i)
                mine.append((time.perf_counter() - start) * 1000)
        except Exception as e:  # reported below; the bench fails
            errors.append(e)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=load) for _ in range(CONCURRENCY)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise SystemExit(f"load failed: {errors[0]}")
    print("| load | requests | p50 | p99 | requests/s |")
    print("|---|---|---|---|---|")
    print(
        f"| {CONCURRENCY} clients, one connection each | {len(latencies)} | {pct(latencies, 50):.2f} ms "
        f"| {pct(latencies, 99):.2f} ms | {len(latencies) / elapsed:.0f} |"
    )


if __name__ == "__main__":
    sys.exit(main())
