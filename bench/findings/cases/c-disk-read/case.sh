#!/bin/bash
# Planted: a disk slower than the load. 16 connections, one thread each; every request
# reads a random 16 KiB block of a 256 MiB file with O_DIRECT (no page cache) and no lock,
# from a disk that serves 1,500 reads a second (the server in a cgroup whose block I/O is
# throttled: v1 blkio.throttle.read_iops_device, v2 io.max riops): the threads spend the
# request's time waiting for their reads. (c-lock-disk's server, --no-lock.)
# Oracle: bpftrace, the time the server's threads spend in pread64(2), per second, over
# the 16 connection threads' time.
. "$(dirname "$0")/../../lib.sh"

cc_build server "$CASE_DIR/../c-lock-disk/server.c"
dd if=/dev/urandom of="$WORK/blocks.dat" bs=1M count=256 conv=fsync status=none
DEV=$(stat -c '%d' "$WORK/blocks.dat")
DEV="$((DEV >> 8)):$((DEV & 255))"
# The throttle applies to the whole disk, not a partition: its major:minor.
PART=/sys/dev/block/$DEV
[ -e "$PART/partition" ] && DEV=$(cat "$(readlink -f "$PART/..")/dev")
new_cgroup blkio io
if [ "$CG_VERSION" = v1 ]; then
  echo "$DEV 1500" > "$CG/blkio.throttle.read_iops_device"
else
  echo "$DEV riops=1500" > "$CG/io.max"
fi
start_in_cgroup server "$WORK/server" "$WORK/blocks.dat" --no-lock

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/syscall_time.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py 16 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
pread, reads = bpf_sum(s, "pread_ns") / 1e9, bpf_sum(s, "pread_calls")
f = {
    "window_s": round(secs, 2),
    "pread_pct_of_request_time": round(100 * pread / (conns * secs), 1),
    "pread_per_s": round(reads / secs, 1),
    "pread_ms_mean": round(1000 * pread / reads, 3) if reads else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s of the window (the server's {PROC.get('threads')} threads' system calls):\n"
        f"  pread64 (the disk reads): {reads} reads, {f['pread_ms_mean']} ms each, "
        f"{f['pread_pct_of_request_time']}% of the {conns} connection threads' time\n"
        f"/proc: the server on a CPU {f['target_cpu_pct']}% of one CPU\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
