#!/bin/bash
# Planted: garbage collection in Node. An HTTP server whose handler builds each page from
# ~20,000 short-lived objects and keeps the last 10 pages (buildPage), with a 1 MiB young
# generation (--max-semi-space-size=1): V8's scavenger runs every few requests and copies
# the live pages, and the old generation fills and is marked and compacted; started with
# the perf map flags README.md gives for Node.
# Oracle: V8's own account, served by the program at /metrics and read at the window's
# ends: the pauses of its collections (perf_hooks PerformanceObserver 'gc' entries: count
# and summed duration, by kind) over the wall time and over the process's CPU
# (process.cpuUsage()); /proc, the CPU of the threads other than the main one (tid = pid):
# V8's helper threads, whose parallel scavenging and concurrent marking are not in the
# pauses (libuv's pool has nothing to do here), for an upper bound of the collector's share.
. "$(dirname "$0")/../../lib.sh"

# In the work directory: V8 writes its isolate log (isolate-*-v8.log) in the current one.
start_server server env -C "$WORK" node --perf-basic-prof --interpreted-frames-native-stack --max-semi-space-size=1 "$CASE_DIR/server.js"

oracle_window() {
  snap "$WORK/metrics.0" curl -sS --max-time 5 "http://127.0.0.1:$SERVER_PORT/metrics"
  sleep "$D"
  snap "$WORK/metrics.1" curl -sS --max-time 5 "http://127.0.0.1:$SERVER_PORT/metrics"
}
oracle_end() {
  oracle_py << 'PY'
(ta, a), (tb, b) = read_snap(os.path.join(WORK, "metrics.0")), read_snap(os.path.join(WORK, "metrics.1"))
a, b, d = json.loads(a), json.loads(b), (tb - ta) / 1e9
gc_s = (b["gc_ms"] - a["gc_ms"]) / 1e3
used = (b["cpu_user_us"] + b["cpu_system_us"] - a["cpu_user_us"] - a["cpu_system_us"]) / 1e6
kinds = {k: round((v - a["gc_ms_by_kind"].get(k, 0)) / 1e3, 2) for k, v in b["gc_ms_by_kind"].items()}
# Every thread of Node is named 'node': the helpers are the threads other than the main one.
pdt, main_tid, times = thread_times(WORK, T0, T1)
helpers = sum(c for t, (c, _) in times.items() if t != main_tid)
f = {
    "gc_cpu_pct_of_used": round(100 * gc_s / used, 1) if used > 0 else None,
    "gc_pause_pct_of_wall": round(100 * gc_s / d, 1),
    "gc_per_s": round((b["gc_count"] - a["gc_count"]) / d, 1),
    "gc_pause_ms_mean": round(1000 * gc_s / (b["gc_count"] - a["gc_count"]), 3) if b["gc_count"] > a["gc_count"] else None,
    "process_cpu_pct": round(100 * used / d, 1),
    "helper_threads_cpu_pct": round(100 * helpers / pdt, 1),
    "gc_cpu_pct_of_used_upper": round(100 * (gc_s + helpers * d / pdt) / used, 1) if used > 0 else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"V8's account over {d:.1f} s (perf_hooks 'gc' entries, process.cpuUsage()): {f['gc_per_s']} collections/s, "
        f"paused {gc_s:.2f} s = {f['gc_pause_pct_of_wall']}% of the wall time, {f['gc_cpu_pct_of_used']}% of the "
        f"{used:.2f} CPU-s the process used; pause by kind (s): {kinds}\n"
        f"/proc: the threads other than the main one (V8's helpers: parallel and concurrent GC work, not in the pauses) on CPU "
        f"{f['helper_threads_cpu_pct']}% of a core; pauses and helpers together {f['gc_cpu_pct_of_used_upper']}% of the CPU used (an upper bound)\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
