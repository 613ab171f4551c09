#!/bin/bash
# Planted: an event loop blocked in its work, in Python. A single-threaded asyncio HTTP
# server (Debian's python3) whose handler calls fetch_account(), which sleeps 3 ms
# synchronously (time.sleep, as a blocking driver would) inside the loop; 24 connections
# wait for its one thread. Its CPU is low: the time is neither CPU nor outside the server.
# Oracle: bpftrace, the server's clock_nanosleep time and calls per second; the main
# thread's CPU (/proc); the requests in flight by Little's law from the load's own counts.
. "$(dirname "$0")/../../lib.sh"

start_server server "$PY" "$CASE_DIR/server.py"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/syscall_time.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
slept, calls = bpf_sum(s, "sleep_ns") / 1e9, bpf_sum(s, "sleep_calls")
req = bpf_sum(s, "write_calls")
f = {
    "loop_asleep_pct": round(100 * slept / secs, 1) if secs else None,
    "sleeps_per_request": round(calls / req, 2) if req else None,
    "sleep_ms_mean": round(1000 * slept / calls, 2) if calls else None,
    "main_thread_cpu_pct": PROC.get("hottest_thread_cpu_pct"),
    "threads": PROC.get("threads"),
}
text = (f"bpftrace over {secs:.1f} s: {calls} clock_nanosleep calls for {req} responses, {f['sleep_ms_mean']} ms each; "
        f"the one thread asleep {f['loop_asleep_pct']}% of the time\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 24 -d 30s "http://127.0.0.1:$SERVER_PORT/"
