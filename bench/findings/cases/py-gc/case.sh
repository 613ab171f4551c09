#!/bin/bash
# Planted: garbage collection, in Python. A single-threaded asyncio HTTP server (Debian's
# python3) whose handler builds a tree of ~1,900 objects that point at their parent and
# children (build_catalogue) beside a cache of 150,000 long-lived objects: the garbage is
# cyclic, CPython's cycle collector runs every few hundred allocations, and its
# collections walk the cache.
# Oracle: the runtime's own account (GET /stats at the window's ends: gc.callbacks' time
# from each collection's start to its stop, and the process's CPU time), the collector's
# share of the CPU the server used.
. "$(dirname "$0")/../../lib.sh"

start_server server "$PY" "$CASE_DIR/server.py"

snap_window "http://127.0.0.1:$SERVER_PORT/stats"
oracle_end() {
  oracle_py << 'PY'
a, b = window_json(WORK)
secs = (b["now_ns"] - a["now_ns"]) / 1e9
gc_s = (b["gc_ns"] - a["gc_ns"]) / 1e9
cpu_s = (b["cpu_ns"] - a["cpu_ns"]) / 1e9
n = b["collections"] - a["collections"]
f = {
    "gc_pct_of_cpu": round(100 * gc_s / cpu_s, 1) if cpu_s else None,
    "collections_per_s": round(n / secs, 1),
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"the runtime's own account over {secs:.1f} s (gc.callbacks, GET /stats): {n} collections, "
        f"{gc_s:.2f} s in the collector of {cpu_s:.2f} s of CPU: {f['gc_pct_of_cpu']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
