#!/bin/bash
# Planted: a per-request fsync, in Python. A thread-per-connection HTTP server (Debian's
# python3, ThreadingHTTPServer, keep-alive) whose handler calls append_order(), which
# writes a 512-byte record to the server's one order log (O_APPEND) and calls os.fsync
# (fsync(2), the GIL released) before answering; 4 connection threads (with 16, handing
# the GIL over costs more than the disk).
# Oracle: bpftrace, the calls and time of the server's fsync(2) (and fdatasync(2)) per
# second, over the 4 connection threads' time; sendto(2) calls (the head and the body of
# each response: two per request); the threads' time in futex(2) (waiting for the GIL).
. "$(dirname "$0")/../../lib.sh"

mkdir "$WORK/logs"
start_server server "$PY" "$CASE_DIR/server.py" "$WORK/logs"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/fsync_time.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py 4 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
responses = bpf_sum(s, "sendto_calls") / 2
f = fsync_figures(s, secs, conns)
calls = f.pop("fsync_calls")
f.update({
    "fsyncs_per_response": round(calls / responses, 2) if responses else None,
    "futex_pct_of_request_time": round(100 * bpf_sum(s, "futex_ns") / 1e9 / (conns * secs), 1) if secs else None,
    "disk_write_mb_per_s": PROC.get("disk_write_mb_per_s"),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
})
text = (f"bpftrace over {secs:.1f} s of the window:\n"
        f"  fsync/fdatasync: {calls} calls ({f['fsync_per_s']}/s), {f['fsync_ms_mean']} ms each, "
        f"{f['fsync_pct_of_request_time']}% of the {conns} connection threads' time\n"
        f"  responses (sendto calls / 2): {responses:.0f}; {f['fsyncs_per_response']} fsyncs per response\n"
        f"  futex (the GIL): {f['futex_pct_of_request_time']}% of the connection threads' time\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 4 -d 30s "http://127.0.0.1:$SERVER_PORT/"
