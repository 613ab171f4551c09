"""A single-threaded asyncio HTTP server with cheap requests, whose event loop stops for
them at times: every 700 ms a scheduled task recomputes a leaderboard synchronously, in
pure Python, for some 80 ms (recompute_leaderboard), and every request that arrives
meanwhile waits for it.
usage: server.py  (prints "listening on 127.0.0.1:PORT" once it listens)
"""
import asyncio
import time

scores = {"player%d" % i: i * 7919 % 100003 for i in range(20000)}
board = []


def recompute_leaderboard():
    global board
    end = time.monotonic() + 0.08
    ranked = []
    while time.monotonic() < end:
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:100]
    board = ranked


async def every(period, fn):
    while True:
        await asyncio.sleep(period)
        fn()


async def handle(reader, writer):
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            top = board[0][0].encode() if board else b"-"
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(top), top))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError):
        pass
    finally:
        writer.close()


async def main():
    asyncio.ensure_future(every(0.7, recompute_leaderboard))
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=512)
    print("listening on 127.0.0.1:%d" % server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
