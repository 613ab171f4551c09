#!/bin/bash
# Planted: keep-alive turned off. The server answers every request with `Connection:
# close` and closes the connection: each request of the 16 clients is a new TCP
# connection (and a new server thread).
# Oracle: the kernel's own TCP counters (nstat: TcpPassiveOpens, connections the server
# accepted) per response the server wrote (bpftrace's write calls).
. "$(dirname "$0")/../../lib.sh"

c_server "$FINDINGS/bt/syscall_time.bt"
oracle_end() {
  oracle_py << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
req = bpf_sum(s, "write_calls")
opens = PROC.get("TcpPassiveOpens_per_s")
f = {
    "connections_per_request": round(opens * secs / req, 2) if req and opens is not None else None,
    "passive_opens_per_s": opens,
    "responses_per_s": round(req / secs, 1) if secs else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"nstat over the window: {opens} TCP connections accepted per second; bpftrace: {f['responses_per_s']} responses per second: "
        f"{f['connections_per_request']} connections per request\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
