"""The asyncio HTTP front of the corpus's single-threaded Python servers: one event loop
on 127.0.0.1 (a free port, said on standard output as "listening on 127.0.0.1:PORT"),
keep-alive, and for every request the body answer(head, n) returns (head: the request's
bytes up to its blank line; n: the connection's count of requests so far).
"""
import asyncio


async def _handle(reader, writer, answer):
    n = 0
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            if not head:
                break
            n += 1
            body = answer(head, n)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _main(answer):
    server = await asyncio.start_server(lambda r, w: _handle(r, w, answer), "127.0.0.1", 0, backlog=128)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on 127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


def serve(answer):
    """Serves until killed."""
    asyncio.run(_main(answer))
