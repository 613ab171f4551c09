#!/bin/bash
# Planted: the event loop busy. A Node HTTP server deriving a key per request with
# crypto.pbkdf2Sync (3,000 rounds of SHA-256) on the event loop's thread (hashPassword);
# started with the perf map flags README.md gives for Node.
# Oracle: the kernel's per-thread CPU (/proc/PID/task/*/schedstat): the main thread (the
# event loop, tid = pid) against the others (libuv's pool, V8's).
. "$(dirname "$0")/../../lib.sh"

# In the work directory: V8 writes its isolate log (isolate-*-v8.log) in the current one.
start_server server env -C "$WORK" node --perf-basic-prof --interpreted-frames-native-stack "$CASE_DIR/server.js"

oracle_end() {
  oracle_py << 'PY'
dt, main_tid, times = thread_times(WORK, T0, T1)
main, waited = times[main_tid]
others = sum(c for t, (c, _) in times.items() if t != main_tid)
f = {
    "main_thread_cpu_pct": round(100 * main / dt, 1),
    "main_thread_busy_pct": round(100 * (main + waited) / dt, 1),
    "other_threads_cpu_pct": round(100 * others / dt, 1),
}
text = (f"/proc over {dt:.1f} s: the main thread (the event loop, tid {main_tid}) on CPU {f['main_thread_cpu_pct']}% "
        f"(on CPU or runnable {f['main_thread_busy_pct']}%); all other threads together {f['other_threads_cpu_pct']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
