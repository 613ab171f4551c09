#!/bin/bash
# Planted: a lock around a slow call, in Python threads. A thread-per-connection HTTP
# server (Debian's python3, ThreadingHTTPServer, keep-alive) whose handler posts each
# order under one threading.Lock (post_entry) while the ledger's write takes ~1 ms
# (write_ledger, a sleep with the GIL released); 16 connection threads queue on the lock.
# Oracle: the server's own account (GET /stats at the window's ends: the time its posts
# waited to acquire the lock and held it, time.monotonic_ns around each), over the 16
# connection threads' time; the server's CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

start_server server "$PY" "$CASE_DIR/server.py"

snap_window "http://127.0.0.1:$SERVER_PORT/stats"
oracle_end() {
  oracle_py 16 << 'PY'
conns = int(ARGS[0])
a, b = window_json(WORK)
secs = (b["now_ns"] - a["now_ns"]) / 1e9
posts = b["posts"] - a["posts"]
waited = (b["lock_wait_ns"] - a["lock_wait_ns"]) / 1e9
held = (b["lock_held_ns"] - a["lock_held_ns"]) / 1e9
f = {
    "lock_wait_pct_of_request_time": round(100 * waited / (conns * secs), 1),
    "lock_held_pct_of_time": round(100 * held / secs, 1),
    "posts_per_s": round(posts / secs, 1),
    "lock_wait_ms_mean": round(1000 * waited / posts, 2) if posts else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"the server's own account over {secs:.1f} s (GET /stats): {posts} posts, waiting "
        f"{f['lock_wait_ms_mean']} ms each for the ledger's lock: {f['lock_wait_pct_of_request_time']}% of the "
        f"{conns} connection threads' time; the lock held {f['lock_held_pct_of_time']}% of the time\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
