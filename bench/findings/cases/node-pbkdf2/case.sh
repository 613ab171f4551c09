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
samples = read_jsonl(os.path.join(WORK, "proc.jsonl"))
a, b = around(samples, T0, T1)
dt = (b["t"] - a["t"]) / 1e9
main_tid = min(b["tasks"], key=int)
def cpu(tid):
    return (b["tasks"][tid][1] - a["tasks"].get(tid, [0, 0])[1]) / 1e9
main = cpu(main_tid)
others = sum(cpu(t) for t in b["tasks"] if t != main_tid)
f = {
    "main_thread_cpu_pct": round(100 * main / dt, 1),
    "main_thread_busy_pct": round(100 * (main + (b["tasks"][main_tid][2] - a["tasks"].get(main_tid, [0, 0, 0])[2]) / 1e9) / dt, 1),
    "other_threads_cpu_pct": round(100 * others / dt, 1),
}
text = (f"/proc over {dt:.1f} s: the main thread (the event loop, tid {main_tid}) on CPU {f['main_thread_cpu_pct']}% "
        f"(on CPU or runnable {f['main_thread_busy_pct']}%); all other threads together {f['other_threads_cpu_pct']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
