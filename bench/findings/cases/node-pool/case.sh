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
samples = read_jsonl(os.path.join(WORK, "proc.jsonl"))
a, b = around(samples, T0, T1)
dt = (b["t"] - a["t"]) / 1e9
main_tid = min(b["tasks"], key=int)
def delta(tid, i):
    return (b["tasks"][tid][i] - a["tasks"].get(tid, [0, 0, 0])[i]) / 1e9
pool_tid = max((t for t in b["tasks"] if t != main_tid), key=lambda t: delta(t, 1))
f = {
    "pool_thread_cpu_pct": round(100 * delta(pool_tid, 1) / dt, 1),
    "pool_thread_busy_pct": round(100 * (delta(pool_tid, 1) + delta(pool_tid, 2)) / dt, 1),
    "main_thread_cpu_pct": round(100 * delta(main_tid, 1) / dt, 1),
    "other_threads_cpu_pct": round(100 * sum(delta(t, 1) for t in b["tasks"] if t not in (main_tid, pool_tid)) / dt, 1),
}
text = (f"/proc over {dt:.1f} s: the pool's thread (tid {pool_tid}) on CPU {f['pool_thread_cpu_pct']}% "
        f"(on CPU or runnable {f['pool_thread_busy_pct']}%); the event loop (tid {main_tid}) {f['main_thread_cpu_pct']}%; "
        f"all other threads together {f['other_threads_cpu_pct']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
