#!/bin/bash
# Planted: libuv's pool too small, in Node. The server derives a key per request with the
# asynchronous crypto.pbkdf2 (hashPasswordAsync: 3,000 rounds of SHA-256), which runs in
# libuv's thread pool, started with UV_THREADPOOL_SIZE=1: the pool's one thread is on a
# CPU all the time while the event loop idles and the machine's other CPU has room; 16
# clients' requests queue for it. (node-pbkdf2's server, --async.) Started with the perf
# map flags README.md gives for Node.
# Oracle: the kernel's per-thread CPU (/proc/PID/task/*/schedstat): the busiest thread
# other than the main one (the pool's), the main thread (the event loop), the rest.
. "$(dirname "$0")/../../lib.sh"

start_server server env -C "$WORK" UV_THREADPOOL_SIZE=1 node --perf-basic-prof --interpreted-frames-native-stack "$CASE_DIR/../node-pbkdf2/server.js" --async

oracle_end() {
  oracle_py << 'PY'
dt, main_tid, times = thread_times(WORK, T0, T1)
pool_tid = max((t for t in times if t != main_tid), key=lambda t: times[t][0])
f = {
    "pool_thread_cpu_pct": round(100 * times[pool_tid][0] / dt, 1),
    "pool_thread_busy_pct": round(100 * sum(times[pool_tid]) / dt, 1),
    "main_thread_cpu_pct": round(100 * times[main_tid][0] / dt, 1),
    "other_threads_cpu_pct": round(100 * sum(c for t, (c, _) in times.items() if t not in (main_tid, pool_tid)) / dt, 1),
}
text = (f"/proc over {dt:.1f} s: the pool's thread (tid {pool_tid}) on CPU {f['pool_thread_cpu_pct']}% "
        f"(on CPU or runnable {f['pool_thread_busy_pct']}%); the event loop (tid {main_tid}) {f['main_thread_cpu_pct']}%; "
        f"all other threads together {f['other_threads_cpu_pct']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
