#!/bin/bash
# Planted: a per-request fdatasync. 16 connections, one thread each; append_order() writes
# a 512-byte record to the connection's log file and calls fdatasync(2) before answering.
# Oracle: bpftrace, the calls and time of the server's fdatasync(2), per second.
. "$(dirname "$0")/../../lib.sh"

cc_build server "$CASE_DIR/server.c"
mkdir "$WORK/logs"
start_server server "$WORK/server" "$WORK/logs"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/syscall_time.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py 16 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
sync_s, calls = bpf_sum(s, "fdatasync_ns") / 1e9, bpf_sum(s, "fdatasync_calls")
f = {
    "window_s": round(secs, 2),
    "fdatasync_per_s": round(calls / secs, 1),
    "fdatasync_ms_mean": round(1000 * sync_s / calls, 3) if calls else None,
    "fdatasync_pct_of_request_time": round(100 * sync_s / (conns * secs), 1),
    "disk_write_mb_per_s": PROC.get("disk_write_mb_per_s"),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s of the window:\n"
        f"  fdatasync: {calls} calls ({f['fdatasync_per_s']}/s), {f['fdatasync_ms_mean']} ms each, "
        f"{f['fdatasync_pct_of_request_time']}% of the {conns} connection threads' time\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
