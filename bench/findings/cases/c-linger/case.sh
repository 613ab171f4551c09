#!/bin/bash
# Planted: requests wait for a batch to be written by a journal thread that flushes every
# 10 ms (group commit with a linger): 16 connection threads wait on a condition variable
# in append_and_wait; the journal thread sleeps in flush_loop.
# Oracle: bpftrace, the server's futex time (the waiting connection threads) and its
# clock_nanosleep time (the journal thread alone sleeps) per second.
. "$(dirname "$0")/../../lib.sh"

c_server "$FINDINGS/bt/syscall_time.bt"
oracle_end() {
  oracle_py 16 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
futex, slept = bpf_sum(s, "futex_ns") / 1e9, bpf_sum(s, "sleep_ns") / 1e9
req = bpf_sum(s, "write_calls")
f = {
    "condition_wait_pct_of_request_time": round(100 * futex / (conns * secs), 1) if secs else None,
    "journal_asleep_pct_of_a_thread": round(100 * slept / secs, 1) if secs else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: futex {futex:.2f} s ({f['condition_wait_pct_of_request_time']}% of the {conns} "
        f"connection threads' time); clock_nanosleep {slept:.2f} s ({f['journal_asleep_pct_of_a_thread']}% of one thread)\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
