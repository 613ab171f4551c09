#!/bin/bash
# Planted: a lock held at times for long. 16 connections, one thread each; every request
# takes a read-write lock's read side for a few hundred nanoseconds (price_of), and a
# rebuilder thread takes its write side once a second to recompute the table on the CPU
# (rebuild_prices, some 80 ms). The median never waits; the requests that come during a
# rebuild all do.
# Oracle: bpftrace, every futex wait of the server's over 10 ms (when, how long): the
# stalls (waits that began within 200 ms of their burst's first), the longest, their
# spacing; /proc, the rebuilder thread's CPU.
. "$(dirname "$0")/../../lib.sh"

c_server "$FINDINGS/bt/long_futex.bt"
oracle_end() {
  oracle_py << 'PY'
waits = []
for line in open(os.path.join(WORK, "sys.bt.out")):
    w = line.split()
    if len(w) == 4 and w[0] == "long":
        start, dur = int(w[1]), int(w[2])
        if T0 <= start + dur and start <= T1:
            waits.append((start, dur))
waits.sort()
bursts = []
for start, dur in waits:
    if not bursts or start > bursts[-1][0] + 200e6:
        bursts.append([start, dur])
    else:
        bursts[-1][1] = max(bursts[-1][1], start + dur - bursts[-1][0])
secs = (T1 - T0) / 1e9
f = {
    "window_s": round(secs, 2),
    "stalls": len(bursts),
    "stall_ms_longest": round(max((b[1] for b in bursts), default=0) / 1e6, 1),
    "stalls_apart_ms": round((bursts[-1][0] - bursts[0][0]) / (len(bursts) - 1) / 1e6) if len(bursts) > 1 else None,
    "waits_over_10ms": len(waits),
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: {len(waits)} futex waits over 10 ms in {len(bursts)} stalls, "
        f"the longest {f['stall_ms_longest']} ms, {f['stalls_apart_ms']} ms apart on average\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
