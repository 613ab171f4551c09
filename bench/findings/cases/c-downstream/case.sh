#!/bin/bash
# Planted: a slow downstream behind a small pool. The front server has 2 workers; each
# request asks a local "inventory service" (another process, 20 ms per answer) over the
# worker's keep-alive connection (call_inventory_service, recv(2)); 16 clients' requests
# queue for the 2 workers, which sit idle in recv.
# Oracle: bpftrace, the front's time in recvfrom(2) (waiting for the downstream) per second,
# and the front's CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

cc_build downstream "$CASE_DIR/downstream.c"
cc_build server "$CASE_DIR/server.c"
start_server downstream "$WORK/downstream"
DOWN_PID=$SERVER_PID DOWN_PORT=$SERVER_PORT
start_server server "$WORK/server" "$DOWN_PORT"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/syscall_time.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py 2 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
workers = int(ARGS[0])
recv_s, calls = bpf_sum(s, "recvfrom_ns") / 1e9, bpf_sum(s, "recvfrom_calls")
f = {
    "downstream_wait_s_per_s": round(recv_s / secs, 2) if secs else None,
    "downstream_wait_pct_of_worker_time": round(100 * recv_s / (workers * secs), 1) if secs else None,
    "downstream_calls_per_s": round(calls / secs, 1) if secs else None,
    "downstream_ms_mean": round(1000 * recv_s / calls, 2) if calls else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: the front's workers waited in recvfrom (the downstream) {f['downstream_wait_s_per_s']} s per s "
        f"= {f['downstream_wait_pct_of_worker_time']}% of the {workers} workers' time; {f['downstream_calls_per_s']} calls/s, "
        f"{f['downstream_ms_mean']} ms each\nthe front's CPU: {f['server_cpu_pct']}% of a core\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
