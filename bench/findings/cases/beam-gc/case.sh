#!/bin/bash
# Planted: garbage collection on the BEAM. An HTTP server (gen_tcp, a process per
# connection) whose every request builds a list of 20,000 tuples: each connection's process
# grows a heap the runtime collects on its dirty CPU schedulers, as major collections.
# The node runs with +JPperf true (its JIT's perf map).
# Oracle: the runtime's own account from inside the node: msacc over each second, summed
# over every thread (dirty schedulers included): the time in the gc state over the time
# awake and not in `other` (scheduling, the busy-wait, a dirty scheduler's wait for its
# turn), over the window's seconds.
. "$(dirname "$0")/../../lib.sh"

# (The server is the test suite's: crates/findings/tests/programs/heaps.erl.)
beam_server heaps
window_times
oracle_end() {
  oracle_py << 'PY'
w0 = int(open(os.path.join(WORK, "w0")).read())
w1 = int(open(os.path.join(WORK, "w1")).read())
rows = [list(map(int, l.split())) for l in open(os.path.join(WORK, "samples")) if len(l.split()) == 4]
# A line closes the second before its time: those that closed inside the window.
inside = [r for r in rows if w0 + 1_000_000_000 <= r[0] <= w1]
gc = sum(r[1] for r in inside)
work = sum(r[2] - r[3] for r in inside)
f = {
    "gc_pct_of_work": round(100 * gc / max(1, work), 1),
    "gc_pct_of_awake": round(100 * gc / max(1, sum(r[2] for r in inside)), 1),
    "seconds": len(inside),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"msacc over {f['seconds']} seconds of the window, every thread: gc {f['gc_pct_of_work']}% of the "
        f"time awake and not in 'other' ({f['gc_pct_of_awake']}% of the time awake); "
        f"the server's CPU {f['target_cpu_pct']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
