"""A single-threaded asyncio HTTP server whose handler calls a synchronous lookup():
it sleeps 3 ms (as a blocking database driver would) inside the event loop, so every
other connection's request waits for the loop.
usage: server.py  (prints "listening on 127.0.0.1:PORT" once it listens)
"""
import asyncio
import json
import time


def fetch_account(n):
    time.sleep(0.003)
    return json.dumps({"account": n, "balance": n * 7 % 1000}).encode()


async def handle(reader, writer):
    n = 0
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            n += 1
            body = fetch_account(n)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=512)
    print("listening on 127.0.0.1:%d" % server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
