"""An asyncio HTTP front (Debian's python3, one thread, keep-alive) that asks a local
"inventory service" in every request (call_inventory_service: a new connection to it with
asyncio.open_connection, one request, its answer) and answers with the reply. The same
file serves the inventory (`server.py --inventory`: every answer after 20 ms, asyncio.sleep),
and, with `--throttle`, a front that asks no one but holds every request 20 ms on a timer of
its own (wait_for_rate_limit: asyncio.sleep, no thread on it), timed as the calls are.
GET /metrics on the front answers its own account: the calls, their summed duration and
its clock (ns, time.monotonic_ns). Prints "listening on 127.0.0.1:PORT" once it listens.
"""
import asyncio
import json
import sys
import time

STATS = {"calls": 0, "ns": 0}


async def call_inventory_service(port):
    t0 = time.monotonic_ns()
    reader, writer = await asyncio.open_connection("localhost", port)
    writer.write(b"stock?\n")
    await writer.drain()
    reply = await reader.readline()
    writer.close()
    await writer.wait_closed()
    STATS["calls"] += 1
    STATS["ns"] += time.monotonic_ns() - t0
    return reply


async def wait_for_rate_limit():
    t0 = time.monotonic_ns()
    await asyncio.sleep(0.02)
    STATS["calls"] += 1
    STATS["ns"] += time.monotonic_ns() - t0
    return b"ok\n"


async def inventory(reader, writer):
    while await reader.readline():
        await asyncio.sleep(0.02)
        writer.write(b"in stock: 12\n")
        await writer.drain()
    writer.close()


async def front(reader, writer, port):
    while True:
        head = await reader.readuntil(b"\r\n\r\n")
        if head.startswith(b"GET /metrics"):
            body = json.dumps(dict(STATS, now_ns=time.monotonic_ns())).encode() + b"\n"
        elif port is None:
            body = await wait_for_rate_limit()
        else:
            body = await call_inventory_service(port)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()


async def main():
    if sys.argv[1:] == ["--inventory"]:
        srv = await asyncio.start_server(inventory, "127.0.0.1", 0)
    else:
        port = None if sys.argv[1:] == ["--throttle"] else int(sys.argv[1])

        async def serve(r, w):
            try:
                await front(r, w, port)
            except (asyncio.IncompleteReadError, ConnectionError):
                w.close()

        srv = await asyncio.start_server(serve, "127.0.0.1", 0, backlog=128)
    print(f"listening on 127.0.0.1:{srv.sockets[0].getsockname()[1]}", flush=True)
    await srv.serve_forever()


asyncio.run(main())
