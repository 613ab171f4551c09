#!/bin/bash
# Planted: a memory limit smaller than the file cache the work needs (expected: memory-limit). A tile server reads
# 64 KiB at random from a 192 MiB file per request (read_tile, pread); its cgroup may
# keep 48 MiB (its memory and its page cache), so the pages it reads are evicted and read
# from the disk again. Without the limit the file stays cached and nothing waits.
# Oracle: bpftrace, the time in pread(2) per second (the disk wait's share of the 16
# connection threads' time), and the cgroup's own memory.stat: the file pages read again
# after eviction (workingset_refault_file) over the window.
. "$(dirname "$0")/../../lib.sh"

cc_build server "$CASE_DIR/server.c"
"$PY" - "$WORK/tiles" << 'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    block = bytes(range(256)) * 4096
    for _ in range(192):
        f.write(block)
    f.flush()
    os.fsync(f.fileno())
    os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
PY
new_cgroup memory memory
if [ "$CG_VERSION" = v1 ]; then
  LIMIT=memory.limit_in_bytes REFAULT=total_workingset_refault_file
else
  LIMIT=memory.max REFAULT=workingset_refault_file
fi
echo $((48 << 20)) > "$CG/$LIMIT"
start_in_cgroup server "$WORK/server" "$WORK/tiles"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/syscall_time.bt" "$SERVER_PID"; }
oracle_window() {
  snap "$WORK/refaults.0" grep "^$REFAULT " "$CG/memory.stat"
  sleep "$D"
  snap "$WORK/refaults.1" grep "^$REFAULT " "$CG/memory.stat"
}
oracle_end() {
  oracle_py 16 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
pread_s, calls = bpf_sum(s, "pread_ns") / 1e9, bpf_sum(s, "pread_calls")
(t0, a), (t1, b) = [read_snap(os.path.join(WORK, f"refaults.{i}")) for i in (0, 1)]
refaults = (int(b.split()[1]) - int(a.split()[1])) / max((t1 - t0) / 1e9, 1e-9)
f = {
    "window_s": round(secs, 2),
    "pread_per_s": round(calls / secs, 1),
    "pread_ms_mean": round(1000 * pread_s / calls, 3) if calls else None,
    "pread_pct_of_request_time": round(100 * pread_s / (conns * secs), 1),
    "refaults_per_s": round(refaults),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s of the window:\n"
        f"  pread: {calls} calls ({f['pread_per_s']}/s), {f['pread_ms_mean']} ms each, "
        f"{f['pread_pct_of_request_time']}% of the {conns} connection threads' time\n"
        f"memory.stat: {f['refaults_per_s']} file pages a second read again after eviction (a 48 MiB limit)\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
