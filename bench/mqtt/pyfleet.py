#!/usr/bin/env python3
"""The anchor for the idle fleet: a minimal asyncio MQTT 3.1.1 client (the figure quoted
beside the fleet goal was measured with one like it). Opens N connections as fast as the
broker accepts (at most 1000 handshakes at a time), holds them for HOLD seconds with
keepalive pings, then prints: connections, seconds to connect them all, connect rate,
and RSS per connection.

    python3 pyfleet.py HOST PORT N KEEPALIVE HOLD
"""
import asyncio
import os
import sys
import time


def connect_packet(cid: bytes, keepalive: int) -> bytes:
    vh = b"\x00\x04MQTT\x04\x02" + keepalive.to_bytes(2, "big")
    payload = len(cid).to_bytes(2, "big") + cid
    body = vh + payload
    return bytes([0x10, len(body)]) + body


def rss_kb() -> int:
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def one(host, port, i, keepalive, sem, done, hold_until, pings):
    async with sem:
        r, w = await asyncio.open_connection(host, port)
        w.write(connect_packet(f"py{os.getpid()}_{i}".encode(), keepalive))
        ack = await r.readexactly(4)
        if ack[0] != 0x20 or ack[3] != 0:
            raise RuntimeError(f"CONNACK {ack!r}")
    done.append(time.monotonic())
    while time.monotonic() < hold_until:
        await asyncio.sleep(keepalive)
        w.write(b"\xc0\x00")
        await r.readexactly(2)
        pings[0] += 1
    w.close()


async def main():
    host, port, n, keepalive, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    base = rss_kb()
    sem = asyncio.Semaphore(1000)
    done = []
    pings = [0]
    t0 = time.monotonic()
    hold_until = t0 + hold
    tasks = [asyncio.create_task(one(host, port, i, keepalive, sem, done, hold_until, pings)) for i in range(n)]
    while len(done) < n and time.monotonic() < hold_until:
        await asyncio.sleep(0.05)
    t = done[-1] - t0 if done else float("nan")
    await asyncio.sleep(3)
    rss = rss_kb()
    errors = sum(1 for x in tasks if x.done() and x.exception() is not None)
    print(f"connections {len(done)} errors {errors} seconds {t:.2f} rate {len(done) / t:.0f} "
          f"rss_kb {rss} rss_per_conn_kb {(rss - base) / max(len(done), 1):.2f}", flush=True)
    await asyncio.gather(*tasks, return_exceptions=True)
    print(f"pings {pings[0]}", flush=True)


asyncio.run(main())
