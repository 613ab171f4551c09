#!/bin/bash
# Planted: a sleep in the request path, in Python threads. A thread-per-connection HTTP
# server (Debian's python3, ThreadingHTTPServer, keep-alive) whose handler calls
# rate_limit(), which sleeps 5 ms (time.sleep: clock_nanosleep(2), the GIL released);
# 16 connection threads.
# Oracle: bpftrace, the server's clock_nanosleep calls and time per second, over the 16
# connection threads' time; sendto(2) calls (the head and the body of each response: two
# per request); the threads' time in futex(2) (waiting for the GIL).
. "$(dirname "$0")/../../lib.sh"

start_server server "$PY" "$CASE_DIR/server.py"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/fsync_time.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py 16 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
slept, calls = bpf_sum(s, "sleep_ns") / 1e9, bpf_sum(s, "sleep_calls")
responses = bpf_sum(s, "sendto_calls") / 2
f = {
    "sleep_pct_of_request_time": round(100 * slept / (conns * secs), 1) if secs else None,
    "sleeps_per_request": round(calls / responses, 2) if responses else None,
    "sleep_ms_mean": round(1000 * slept / calls, 2) if calls else None,
    "futex_pct_of_request_time": round(100 * bpf_sum(s, "futex_ns") / 1e9 / (conns * secs), 1) if secs else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: {calls} clock_nanosleep calls for {responses:.0f} responses (sendto calls / 2), "
        f"{f['sleep_ms_mean']} ms each; {f['sleep_pct_of_request_time']}% of the {conns} connection threads' time asleep; "
        f"{f['futex_pct_of_request_time']}% in futex (the GIL)\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
