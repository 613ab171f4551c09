#!/bin/bash
# Planted: busy-waiting. Each connection's thread posts its request to one of 2 workers and
# spins in await_reply() (pause; sched_yield(2) every 1,024 checks of a flag) until it is done; the
# workers spin the same way in next_job() looking for work (~50 us of CPU a job). Nobody
# sleeps: 16 waiting threads burn the CPUs the 2 workers need.
# Oracle: bpftrace, the server's sched_yield calls and responses per second; perf record
# (99 Hz, call graphs, over the window) for where its CPU samples land.
. "$(dirname "$0")/../../lib.sh"

c_server "$FINDINGS/bt/syscall_time.bt"
oracle_window() { perf record -q -F 99 -g -p "$SERVER_PID" -o "$WORK/perf.data" -- sleep "$D"; }
oracle_end() {
  oracle_py << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
req = bpf_sum(s, "write_calls")
yields = bpf_sum(s, "sched_yield_calls")
stacks = perf_stacks(os.path.join(WORK, "perf.data"))
total = len(stacks)
# A sample in sched_yield (libc's wrapper keeps no frame: frame pointers may skip its
# caller), await_reply or next_job is spinning.
spin = sum(1 for st in stacks if "await_reply" in st or "next_job" in st or any("sched_yield" in fn for fn in st))
work = sum(1 for st in stacks if "compute_digest" in st)
f = {
    "sched_yield_per_s": round(yields / secs, 1) if secs else None,
    "sched_yield_per_request": round(yields / req, 1) if req else None,
    "spin_pct_of_cpu_samples": round(100 * spin / total, 1) if total else None,
    "work_pct_of_cpu_samples": round(100 * work / total, 1) if total else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: {yields} sched_yield calls for {req} responses ({f['sched_yield_per_request']} a request)\n"
        f"perf record at 99 Hz over the window ({total} samples of the server): {f['spin_pct_of_cpu_samples']}% spinning (in await_reply, next_job or sched_yield), "
        f"{f['work_pct_of_cpu_samples']}% in compute_digest (the work)\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
