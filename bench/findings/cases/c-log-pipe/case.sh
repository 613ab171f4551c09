#!/bin/bash
# Planted: an access log written into a pipe whose reader is slow. 16 connection threads;
# after each response the thread writes a 1 KiB line to fd 3, a pipe to a collector that
# reads ~320 KiB/s: the writes wait for room in the pipe, and the next request waits for
# the write.
# Oracle: bpftrace, the server's time in write(2) per second over the 16 connection
# threads' time.
. "$(dirname "$0")/../../lib.sh"

cc_build server "$CASE_DIR/server.c"
start_server server bash -c 'exec "$0" 3> >(exec "$1" "$2")' "$WORK/server" "$PY" "$CASE_DIR/collector.py"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/syscall_time.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py 16 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
wrote = bpf_sum(s, "write_ns") / 1e9
calls = bpf_sum(s, "write_calls")
f = {
    "write_pct_of_request_time": round(100 * wrote / (conns * secs), 1) if secs else None,
    "write_ms_mean": round(1000 * wrote / calls, 2) if calls else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: {calls} writes, {wrote:.1f} s in them "
        f"({f['write_ms_mean']} ms each): {f['write_pct_of_request_time']}% of the {conns} connection threads' time\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
