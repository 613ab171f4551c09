#!/bin/bash
# Planted: a per-request fsync, in Go. A net/http server whose handler calls appendOrder,
# which writes a 512-byte record to the server's one order log (O_APPEND) and calls
# f.Sync() (fsync(2)) before answering; 16 connections, a goroutine each, and the goroutine
# holds its thread in the system call.
# Oracle: bpftrace, the calls and time of the server's fsync(2) (and fdatasync(2)) per
# second, over the 16 connections' time; write(2) calls (one log record and one response
# per request).
. "$(dirname "$0")/../../lib.sh"

(cd "$CASE_DIR" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/fsyncserver" .)
mkdir "$WORK/logs"
start_server server "$WORK/fsyncserver" "$WORK/logs"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/fsync_time.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py 16 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
writes = bpf_sum(s, "write_calls")
f = fsync_figures(s, secs, conns)
calls = f.pop("fsync_calls")
f.update({
    "fsyncs_per_write_pair": round(2 * calls / writes, 2) if writes else None,
    "disk_write_mb_per_s": PROC.get("disk_write_mb_per_s"),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
})
text = (f"bpftrace over {secs:.1f} s of the window:\n"
        f"  fsync/fdatasync: {calls} calls ({f['fsync_per_s']}/s), {f['fsync_ms_mean']} ms each, "
        f"{f['fsync_pct_of_request_time']}% of the {conns} connections' time\n"
        f"  write(2): {writes} calls (a log record and a response per request: "
        f"{f['fsyncs_per_write_pair']} fsyncs per two writes)\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
