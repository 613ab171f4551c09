"""A single-threaded asyncio HTTP server that remembers every request's session:
remember_session keeps an 8 KiB bytearray per request in a list nothing ever empties.
GET /metrics answers the interpreter's own account of what it holds, as JSON: the bytes
the list keeps (kept) and the blocks its allocator has handed out
(sys.getallocatedblocks())."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from async_front import serve  # noqa: E402

sessions = []


def remember_session(n):
    b = bytearray(8192)
    b[0] = n & 0xFF
    sessions.append(b)
    return len(sessions)


def answer(head, n):
    if head.startswith(b"GET /metrics"):
        kept = sum(len(b) for b in sessions)
        return (json.dumps({"kept": kept, "blocks": sys.getallocatedblocks(), "sessions": len(sessions)}) + "\n").encode()
    return b"%d\n" % remember_session(n)


if __name__ == "__main__":
    serve(answer)
