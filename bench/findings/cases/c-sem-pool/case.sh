#!/bin/bash
# Planted: a resource pool too small for its load. 16 connection threads; every request
# takes one of three upstream connections from a POSIX semaphore (sem_wait in
# call_upstream), holds it 1.5 ms and gives it back: most of a request's time is the wait
# for a free one.
# Oracle: bpftrace, the server's futex time per second (the semaphore's waits) over the 16
# connection threads' time.
. "$(dirname "$0")/../../lib.sh"

c_server "$FINDINGS/bt/syscall_time.bt"
oracle_end() {
  oracle_py 16 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
waited = bpf_sum(s, "futex_ns") / 1e9
req = bpf_sum(s, "write_calls")
f = {
    "sem_wait_pct_of_request_time": round(100 * waited / (conns * secs), 1) if secs else None,
    "futex_calls_per_request": round(bpf_sum(s, "futex_calls") / req, 2) if req else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: {waited:.1f} s in futex for {req} responses: "
        f"{f['sem_wait_pct_of_request_time']}% of the {conns} connection threads' time\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
