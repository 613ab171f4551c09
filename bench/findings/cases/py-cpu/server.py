"""A single-threaded asyncio HTTP server (keep-alive) whose handler renders each answer
with ~3 ms of pure-Python CPU in render_report(): the event loop's one thread is busy."""
import asyncio
import sys


def render_report(seed):
    total = 0
    for i in range(6000):
        total = (total * 31 + i * seed) % 1000003
    return total


async def handle(reader, writer):
    n = 0
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            if not head:
                break
            n += 1
            body = b"%d\n" % render_report(n)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=128)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on 127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
