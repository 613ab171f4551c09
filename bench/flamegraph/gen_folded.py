#!/usr/bin/env python3
"""Writes a synthetic folded-stack file with N unique stacks (default 609,000).

Deterministic (seeded). Stacks walk a call tree: 8 root threads, depths 5-30, each frame
chosen among a few callees of its caller, so prefixes are shared as in real profiles,
and names look like C, C++, Rust, Java and Erlang symbols.
"""
import random
import sys

def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 609_000
    out = sys.argv[2] if len(sys.argv) > 2 else "-"
    rng = random.Random(20261122)
    parts = ["rabbit", "amqp", "queue", "channel", "reader", "writer", "ets", "gen_server",
             "proc_lib", "erts", "beam", "tcp", "ssl", "epoll", "sched", "alloc", "hash",
             "route", "deliver", "publish", "confirm", "credit", "flow", "msg", "store"]
    styles = [
        lambda a, b, i: f"{a}_{b}_{i}",
        lambda a, b, i: f"${a}_{b}:{b}_{i}/{i % 5}",
        lambda a, b, i: f"{a}::{b}::do_{i}",
        lambda a, b, i: f"org/{a}/{b.capitalize()}{i}.run",
        lambda a, b, i: f"{a}{i}_[k]",
    ]
    vocab = []
    for i in range(40_000):
        a, b = rng.choice(parts), rng.choice(parts)
        vocab.append(styles[i % len(styles)](a, b, i))
    roots = [f"{i}_scheduler" for i in range(1, 9)]
    seen = set()
    f = sys.stdout if out == "-" else open(out, "w")
    lines = 0
    while lines < n:
        root = rng.randrange(len(roots))
        depth = rng.randint(5, 30)
        ids = []
        cur = root * 7919
        for _ in range(depth):
            cur = (cur * 31 + rng.randrange(3 if len(ids) < 6 else 4)) % len(vocab)
            ids.append(cur)
        key = (root, tuple(ids))
        if key in seen:
            continue
        seen.add(key)
        count = int(rng.paretovariate(1.2)) + rng.randrange(3)
        f.write(roots[root] + ";" + ";".join(vocab[i] for i in ids) + f" {count}\n")
        lines += 1
    if f is not sys.stdout:
        f.close()

if __name__ == "__main__":
    main()
