"""Websocket echo benchmark against a running stack; prints a table.

Run through scripts/bench-functions.sh (``make bench-websocket``), which
starts the stack and sets LEVERS9_BENCH_HTTP to the controlplane's HTTP
listener. Deploys one private ``@asgi`` app (a plain ASGI websocket echo),
opens one websocket to it with a token, and times, after WARM_UP untimed
messages, CALLS round trips of a small text message: sent, echoed by the
app, received. Also the handshake (connection to accepted) of a few
connections to the warm container. The client is the few lines of RFC
6455 below (the stdlib has none), one message in flight at a time.
"""

import base64
import os
import socket
import statistics
import struct
import sys
import tempfile
import time
import urllib.parse

WARM_UP = 200
CALLS = int(os.environ.get("LEVERS9_BENCH_WARM_CALLS", "1000"))
HANDSHAKES = 20

APP = """
from levers9 import asgi


async def echo(scope, receive, send):
    if scope["type"] != "websocket":
        return
    await receive()
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        await send({"type": "websocket.send", "text": message["text"]})


@asgi(name="bench-ws", keep_warm_seconds=300, concurrency=32)
def make_echo():
    return echo
"""


def pct(samples, p):
    samples = sorted(samples)
    return samples[min(len(samples) - 1, int(len(samples) * p / 100))]


def row(measure, samples):
    print(
        f"| {measure} | {len(samples)} | {pct(samples, 50):.2f} ms | {pct(samples, 99):.2f} ms "
        f"| {statistics.mean(samples):.2f} ms |"
    )


class Socket:
    """A websocket client: text messages, masked as a client's must be."""

    def __init__(self, url, token):
        parts = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {token}\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError(f"the handshake got no answer: {self.buffer!r}")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError(f"the handshake was refused: {head!r}")

    def send(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        size = struct.pack("!B", 0x80 | n) if n < 126 else struct.pack("!BH", 0x80 | 126, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(b"\x81" + size + mask + masked)

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("the connection closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def receive(self):
        first, second = self._read(2)
        n = second & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", self._read(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", self._read(8))
        payload = self._read(n)
        if first & 0x0F != 0x1:
            raise RuntimeError(f"not a text message: opcode {first & 0x0F}, {payload!r}")
        return payload.decode()

    def close(self):
        self.sock.sendall(b"\x88\x82" + b"\x00\x00\x00\x00" + struct.pack("!H", 1000))
        self.sock.close()


def main():
    from levers9.client import get_client
    from levers9.deployment import deploy
    from levers9.modules import load_file
    from levers9.v1 import workspace_pb2, workspace_pb2_grpc

    base = os.environ["LEVERS9_BENCH_HTTP"]
    code = tempfile.mkdtemp(prefix="l9-websocket-bench-")
    path = os.path.join(code, "ws.py")
    with open(path, "w") as f:
        f.write(APP)
    deploy(load_file(path), "bench-ws")
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
    url = f"{base}/endpoint/{workspace}/bench-ws/ws"
    ws = Socket(url, client.target.token)  # starts the container
    for i in range(WARM_UP):
        ws.send(f"m{i}")
        assert ws.receive() == f"m{i}"
    round_trips = []
    for i in range(CALLS):
        start = time.perf_counter()
        ws.send(f"m{i}")
        assert ws.receive() == f"m{i}"
        round_trips.append((time.perf_counter() - start) * 1000)
    handshakes = []
    for _ in range(HANDSHAKES):
        start = time.perf_counter()
        other = Socket(url, client.target.token)
        handshakes.append((time.perf_counter() - start) * 1000)
        other.close()
    ws.close()
    print("| measure | n | p50 | p99 | mean |")
    print("|---|---|---|---|---|")
    row("warm websocket echo round trip (one connection, token)", round_trips)
    row("websocket handshake to a warm container (until accepted)", handshakes)


if __name__ == "__main__":
    sys.exit(main())
