#!/bin/bash
# Planted: a mutex held around a disk read. 16 connections, one thread each; every request
# takes `store_lock` in lookup_block() and reads a 16 KiB block with O_DIRECT under it.
# Oracle: bpftrace, the time the server's threads spend in futex(2) (waiting for the lock)
# and in pread64(2) (the read under it), per second.
. "$(dirname "$0")/../../lib.sh"

cc_build server "$CASE_DIR/server.c"
dd if=/dev/urandom of="$WORK/blocks.dat" bs=1M count=64 conv=fsync status=none
start_server server "$WORK/server" "$WORK/blocks.dat"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/syscall_time.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py 16 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
futex, pread = bpf_sum(s, "futex_ns") / 1e9, bpf_sum(s, "pread_ns") / 1e9
reads = bpf_sum(s, "pread_calls")
f = {
    "window_s": round(secs, 2),
    "lock_wait_s_per_s": round(futex / secs, 2),
    "lock_wait_pct_of_request_time": round(100 * futex / (conns * secs), 1),
    "read_under_lock_s_per_s": round(pread / secs, 3),
    "pread_per_s": round(reads / secs, 1),
    "pread_ms_mean": round(1000 * pread / reads, 3) if reads else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s of the window (the server's {PROC.get('threads')} threads' system calls):\n"
        f"  futex wait (the lock): {futex:.2f} s = {f['lock_wait_s_per_s']} threads waiting on average, "
        f"{f['lock_wait_pct_of_request_time']}% of the {conns} connection threads' time\n"
        f"  pread64 (the read under the lock): {reads} reads, {f['pread_ms_mean']} ms each, "
        f"{f['read_under_lock_s_per_s']} s per s (1.0 = one read at a time, always)\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
