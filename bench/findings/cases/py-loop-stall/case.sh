#!/bin/bash
# Planted: an event loop that runs one function for long at times, in Python. A
# single-threaded asyncio HTTP server (Debian's python3) whose requests are cheap; every
# 700 ms a scheduled task recomputes a leaderboard synchronously for some 80 ms
# (recompute_leaderboard): the requests that come then wait, the median never does.
# Oracle: bpftrace, the loop's turns over 20 ms (from epoll_wait returning to the next
# call): how many, their median length and spacing.
. "$(dirname "$0")/../../lib.sh"

start_server server "$PY" "$CASE_DIR/server.py"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/loop_turns.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py << 'PY'
turns = []
for line in open(os.path.join(WORK, "sys.bt.out")):
    w = line.split()
    if len(w) == 3 and w[0] == "turn":
        start, dur = int(w[1]), int(w[2])
        if T0 <= start and start + dur <= T1:
            turns.append((start, dur))
turns.sort()
def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else None
secs = (T1 - T0) / 1e9
each = median([d for _, d in turns])
apart = median([b[0] - a[0] for a, b in zip(turns, turns[1:])])
f = {
    "window_s": round(secs, 2),
    "long_turns": len(turns),
    "turn_ms_median": round(each / 1e6, 1) if each else None,
    "turns_apart_ms": round(apart / 1e6) if apart else None,
    "main_thread_cpu_pct": PROC.get("hottest_thread_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: {len(turns)} turns of the loop over 20 ms, "
        f"{f['turn_ms_median']} ms each, {f['turns_apart_ms']} ms apart (medians)\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
