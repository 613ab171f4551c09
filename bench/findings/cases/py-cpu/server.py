"""A single-threaded asyncio HTTP server (keep-alive) whose handler renders each answer
with ~3 ms of pure-Python CPU in render_report(): the event loop's one thread is busy."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from async_front import serve  # noqa: E402


def render_report(seed):
    total = 0
    for i in range(6000):
        total = (total * 31 + i * seed) % 1000003
    return total


def answer(head, n):
    return b"%d\n" % render_report(n)


if __name__ == "__main__":
    serve(answer)
