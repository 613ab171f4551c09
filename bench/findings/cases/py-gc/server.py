"""A single-threaded asyncio HTTP server (keep-alive) whose handler builds each answer from
a tree of small objects that point at each other (build_catalogue: every node keeps its
parent and its children), kept beside a large cache of long-lived objects: the garbage is
cyclic, so only CPython's cycle collector frees it, and its collections walk the cache.
GET /stats answers the runtime's own account of its collector: the collections and the
time between each one's "start" and "stop" (gc.callbacks, time.perf_counter_ns), and the
process's CPU time.
usage: server.py  (prints "listening on 127.0.0.1:PORT" once it listens)
"""
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from async_front import serve  # noqa: E402

# Long-lived objects every full collection walks.
CACHE = [{"sku": i, "tags": [i, str(i)]} for i in range(150_000)]
STATS = {"collections": 0, "gc_ns": 0}
_started = [0]


def on_gc(phase, info):
    if phase == "start":
        _started[0] = time.perf_counter_ns()
    else:
        STATS["collections"] += 1
        STATS["gc_ns"] += time.perf_counter_ns() - _started[0]


gc.callbacks.append(on_gc)


class Node:
    __slots__ = ("parent", "children", "price")

    def __init__(self, parent, price):
        self.parent = parent
        self.children = []
        self.price = price


def build_catalogue(seed):
    root = Node(None, seed)
    level = [root]
    for depth in range(3):
        nxt = []
        for n in level:
            for k in range(12):
                c = Node(n, (n.price * 31 + k) % 1009)
                n.children.append(c)
                nxt.append(c)
        level = nxt
    return sum(n.price for n in level) % 1000003


def answer(head, n):
    if head.startswith(b"GET /stats "):
        return json.dumps(dict(STATS, now_ns=time.monotonic_ns(), cpu_ns=time.process_time_ns())).encode() + b"\n"
    return b"%d\n" % build_catalogue(n)


if __name__ == "__main__":
    serve(answer)
