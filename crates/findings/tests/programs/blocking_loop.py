"""An asyncio HTTP server whose one thread blocks in every request: the handler calls
lookup(), which sleeps 4 ms synchronously (as a synchronous database driver would), so
the event loop serves nothing else meanwhile and the other connections' requests wait.

usage: python3 blocking_loop.py   (prints "ready PORT" once it listens on 127.0.0.1)
"""
import asyncio
import hashlib
import time


def lookup():
    time.sleep(0.004)
    return hashlib.sha256(b"x" * 256).hexdigest().encode()


async def handle(reader, writer):
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            body = lookup()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=512)
    print("ready %d" % server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
