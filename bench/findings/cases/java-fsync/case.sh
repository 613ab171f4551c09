#!/bin/bash
# Planted: a per-request fdatasync, in Java. An HttpServer (4 threads) whose handler calls
# appendOrder, which writes a 512-byte record to the server's one order log and forces it
# (FileChannel.force(false): fdatasync(2)) before answering; 4 connections, one per thread.
# Oracle: bpftrace, the calls and time of the server's fsync(2) and fdatasync(2) per
# second, over the 4 connections' time.
. "$(dirname "$0")/../../lib.sh"

mkdir "$WORK/classes" "$WORK/logs"
javac -d "$WORK/classes" "$CASE_DIR/Orders.java"
# -Dsun.net.httpserver.nodelay=true: as in java-gc (no delayed ACK per response).
start_server server java -Dsun.net.httpserver.nodelay=true -XX:+PreserveFramePointer -Xms128m -Xmx128m -cp "$WORK/classes" Orders "$WORK/logs"
warm_up "http://127.0.0.1:$SERVER_PORT/" 2

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/fsync_time.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py 4 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
f = fsync_figures(s, secs, conns)
calls = f.pop("fsync_calls")
f.update({"disk_write_mb_per_s": PROC.get("disk_write_mb_per_s"), "target_cpu_pct": PROC.get("target_cpu_pct")})
text = (f"bpftrace over {secs:.1f} s: {calls} fsync/fdatasync calls ({f['fsync_per_s']}/s), {f['fsync_ms_mean']} ms each: "
        f"{f['fsync_pct_of_request_time']}% of the {conns} connections' time; /proc: disk writes {f['disk_write_mb_per_s']} MB/s, "
        f"the server's CPU {f['target_cpu_pct']}% of a core\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 4 -d 30s "http://127.0.0.1:$SERVER_PORT/"
