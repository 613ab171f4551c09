#!/bin/bash
# Planted: work serialised on one Erlang process. An HTTP server on the BEAM (gen_tcp, a
# process per connection) whose every request calls one gen_server, `ledger`, computing
# about a millisecond in handle_call: the connections' processes queue in its mailbox,
# and the ledger runs on one scheduler thread at a time, whichever it is given, so no
# thread stands out. The node runs with +JPperf true (its JIT's perf map).
# Oracle: the runtime's own account, from inside the node: the ledger process's status
# and message queue length (erlang:process_info) every 10 ms, counted over the same
# seconds: the share of samples it was running or runnable, and the callers queued.
. "$(dirname "$0")/../../lib.sh"

# (The server is the test suite's: crates/findings/tests/programs/ledger.erl.)
beam_server ledger
window_times
oracle_end() {
  oracle_py << 'PY'
w0 = int(open(os.path.join(WORK, "w0")).read())
w1 = int(open(os.path.join(WORK, "w1")).read())
rows = [list(map(int, l.split())) for l in open(os.path.join(WORK, "samples")) if len(l.split()) == 5]
def at(t):
    # The cumulative counts written last at or before t (once a second).
    before = [r for r in rows if r[0] <= t]
    return before[-1] if before else rows[0]
a, b = at(w0), at(w1)
busy, idle, queued, n = (b[1] - a[1]), (b[2] - a[2]), (b[3] - a[3]), (b[4] - a[4])
f = {
    "ledger_busy_pct": round(100 * busy / max(1, busy + idle), 1),
    "ledger_queue_mean": round(queued / max(1, n), 1),
    "samples": n,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
    "hottest_thread_cpu_pct": PROC.get("hottest_thread_cpu_pct"),
}
text = (f"erlang:process_info(ledger, [status, message_queue_len]) every 10 ms, {n} samples over "
        f"{(b[0] - a[0]) / 1e9:.1f} s of the window: running or runnable {f['ledger_busy_pct']}%, "
        f"{f['ledger_queue_mean']} calls queued on average\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
