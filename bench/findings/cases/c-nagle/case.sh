#!/bin/bash
# Planted: Nagle's algorithm against delayed ACK. A keep-alive server that writes each
# response's head and body in two write(2)s without TCP_NODELAY: the body waits for the
# client's ACK of the head, which the client's kernel delays (~40 ms); the server is idle.
# Oracle: nstat's TcpExtDelayedACKs (delayed ACKs sent, whole machine) per response, and the
# server's CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

cc_build server "$FINDINGS/cases/c-nagle/server.c"
start_server server "$WORK/server"
oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/syscall_time.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
responses = bpf_sum(s, "write_calls") / 2  # a head and a body each
delayed = PROC.get("TcpExtDelayedACKs_per_s")
f = {
    "responses_per_s": round(responses / secs, 1) if secs else None,
    "delayed_acks_per_s": delayed,
    "delayed_acks_per_response": round(delayed / (responses / secs), 2) if secs and responses and delayed is not None else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"nstat: {delayed} delayed ACKs/s (whole machine) against {f['responses_per_s']} responses/s "
        f"(bpftrace: the server's write(2) calls / 2) = {f['delayed_acks_per_response']} per response\n"
        f"the server's CPU: {f['server_cpu_pct']}% of a core\n")
oracle(text, f)
PY
}

# (c-nagle-wrk: the same server driven by wrk, its latency as wrk reports it.)
if [ "${NAGLE_BY_WRK:-0}" = 1 ]; then
  run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" exec -- wrk -t 1 -c 16 -d 60s --latency "http://127.0.0.1:$SERVER_PORT/"
else
  run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
fi
