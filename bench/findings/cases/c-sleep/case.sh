#!/bin/bash
# Planted: a sleep in the request path. 16 connection threads; every request calls
# throttle(), which sleeps 5 ms (usleep).
# Oracle: bpftrace, the server's clock_nanosleep calls and time per second.
. "$(dirname "$0")/../../lib.sh"

c_server "$FINDINGS/bt/syscall_time.bt"
oracle_end() {
  oracle_py 16 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
slept, calls = bpf_sum(s, "sleep_ns") / 1e9, bpf_sum(s, "sleep_calls")
req = bpf_sum(s, "write_calls")
f = {
    "sleep_pct_of_request_time": round(100 * slept / (conns * secs), 1) if secs else None,
    "sleeps_per_request": round(calls / req, 2) if req else None,
    "sleep_ms_mean": round(1000 * slept / calls, 2) if calls else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: {calls} clock_nanosleep calls for {req} responses, {f['sleep_ms_mean']} ms each; "
        f"{f['sleep_pct_of_request_time']}% of the {conns} connection threads' time asleep\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
