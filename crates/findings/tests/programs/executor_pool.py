# An asyncio HTTP server whose every request hands a blocking call (fetch_rates: a 20 ms
# sleep, as a blocking client library would wait) to a pool of four threads
# (run_in_executor): the pool is the limit, at 200 requests a second, while the event
# loop idles. Its threads and the loop's share the process's name.
# usage: python3 executor_pool.py   (prints "ready PORT" once it listens on 127.0.0.1)
import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

pool = ThreadPoolExecutor(max_workers=4)


def fetch_rates():
    time.sleep(0.02)
    return b"ok\n"


async def handle(reader, writer):
    try:
        while True:
            if not await reader.readline():
                break
            while await reader.readline() not in (b"\r\n", b"\n", b""):
                pass
            body = await asyncio.get_running_loop().run_in_executor(pool, fetch_rates)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print("ready", server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


asyncio.run(main())
