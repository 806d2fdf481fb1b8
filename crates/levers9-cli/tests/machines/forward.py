"""Forwards TCP ports: listens on LISTEN_HOST:PORT for each PORT and copies
each connection to TARGET_HOST:PORT. The machines test runs one on the host
(on its own veth address, to the servers on loopback) and one inside the
second host's network namespace (on its loopback, to the host's veth
address), so the box reaches the controlplane and the registry at the
127.0.0.1 addresses the join file and image references name.

Usage: python3 forward.py LISTEN_HOST TARGET_HOST PORT [PORT...]
"""

import asyncio
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main():
    listen_host, target_host, *ports = sys.argv[1:]

    def handler(port):
        async def handle(reader, writer):
            try:
                up_reader, up_writer = await asyncio.open_connection(target_host, port)
            except OSError:
                writer.close()
                return
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        return handle

    servers = [
        await asyncio.start_server(handler(int(p)), listen_host, int(p)) for p in ports
    ]
    print("forwarding", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


asyncio.run(main())
