#!/bin/bash
# Planted: contention on a lock that spins. 16 connection threads; every request posts to
# a ledger under one pthread spinlock (pthread_spin_lock never sleeps), computing ~0.3 ms
# while holding it: the waiters burn the CPUs, and the holder competes with them for one.
# Oracle: perf record (99 Hz, call graphs, over the window): the share of the server's
# CPU samples spinning in pthread_spin_lock, and in apply_entry (the work under the lock).
. "$(dirname "$0")/../../lib.sh"

c_server

oracle_window() { perf record -q -F 99 -g -p "$SERVER_PID" -o "$WORK/perf.data" -- sleep "$D"; }
oracle_end() {
  oracle_py << 'PY'
stacks = perf_stacks(os.path.join(WORK, "perf.data"))
total = len(stacks)
spin = sum(1 for st in stacks if any("pthread_spin_lock" in fn for fn in st))
work = sum(1 for st in stacks if "apply_entry" in st)
f = {
    "spin_pct_of_cpu_samples": round(100 * spin / total, 1) if total else None,
    "work_pct_of_cpu_samples": round(100 * work / total, 1) if total else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"perf record at 99 Hz over the window ({total} samples of the server): {f['spin_pct_of_cpu_samples']}% "
        f"spinning in pthread_spin_lock, {f['work_pct_of_cpu_samples']}% in apply_entry (the work under the lock)\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
