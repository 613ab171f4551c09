#!/bin/bash
# Planted: metrics sent one datagram at a time. 16 connection threads; every request calls
# emit_metrics(), which sends 48 counters to a local UDP collector, one sendto(2) each: the
# server's CPU goes to the kernel's UDP send path, not to the program's own code.
# Oracle: bpftrace, the server's time inside sendto per second, as a share of its CPU time
# (/proc's schedstat); the calls per request.
. "$(dirname "$0")/../../lib.sh"

c_server "$CASE_DIR/sendto.bt"
oracle_end() {
  oracle_py << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
sent = bpf_sum(s, "sendto_ns") / 1e9
calls, req = bpf_sum(s, "sendto_calls"), bpf_sum(s, "write_calls")
cpu = PROC.get("target_cpu_pct") or 0
f = {
    "sendto_pct_of_server_cpu": round(100 * sent / (cpu / 100 * secs), 1) if cpu and secs else None,
    "sendto_per_request": round(calls / req, 1) if req else None,
    "sendto_us_mean": round(1e6 * sent / calls, 2) if calls else None,
    "server_cpu_pct": cpu,
}
text = (f"bpftrace over {secs:.1f} s: {calls} sendto calls for {req} responses, {f['sendto_us_mean']} us each; "
        f"{sent:.1f} s inside them, {f['sendto_pct_of_server_cpu']}% of the server's CPU time\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
