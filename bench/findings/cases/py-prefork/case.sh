#!/bin/bash
# Planted: a pool of worker processes too small. A pre-forking Python server (gunicorn's
# sync workers' way): the master forks two workers, each answers one request at a time
# after a 10 ms blocking call (lookup_inventory), under 32 connections closed after each
# answer. kiln is given the master's pid the moment the server is up.
# (The server is the test suite's: crates/findings/tests/programs/prefork.py.)
# Oracle: bpftrace, the workers' time in clock_nanosleep per second; ss, the listener's
# accept queue (Recv-Q) at mid-window.
. "$(dirname "$0")/../../lib.sh"

SRC="$CASE_DIR/../../../../crates/findings/tests/programs/prefork.py"
start_ready_server server "$PY" "$SRC"
WORKERS=$(pgrep -P "$SERVER_PID" | paste -sd, -)

oracle_begin() {
  local filter
  filter=$(echo "$WORKERS" | sed 's/\([0-9]*\)/pid == \1/g; s/,/ || /g')
  sampler bpftrace -q -e "BEGIN { printf(\"READY\\n\"); }
    tracepoint:syscalls:sys_enter_clock_nanosleep /$filter/ { @s[tid] = nsecs; }
    tracepoint:syscalls:sys_exit_clock_nanosleep /@s[tid]/ { @ns = sum(nsecs - @s[tid]); delete(@s[tid]); }
    END { clear(@s); printf(\"@t %llu\\n\", nsecs); }" > "$WORK/sleep.bt.out" 2> "$WORK/sleep.bt.err"
  "$PY" -c "import sys; sys.path.insert(0, '$FINDINGS'); import oracle_lib as o; sys.exit(0 if o.wait_ready('$WORK/sleep.bt.out', timeout=90) else 1)" ||
    { say "bpftrace did not start"; exit 1; }
  mono > "$WORK/bt.t0"
}
oracle_window() {
  sleep $((D / 2))
  ss -ltnH "sport = :$SERVER_PORT" > "$WORK/ss.txt" 2>&1 || true
}
oracle_end() {
  oracle_py "$WORKERS" << 'PY'
out = open(os.path.join(WORK, "sleep.bt.out")).read()
ns = 0
end = None
for line in out.splitlines():
    if line.startswith("@ns:"):
        ns = int(line.split()[1])
    if line.startswith("@t "):
        end = int(line.split()[1])
start = int(open(os.path.join(WORK, "bt.t0")).read())
secs = (end - start) / 1e9 if end else None
ss = open(os.path.join(WORK, "ss.txt")).read().split()
f = {
    "workers": len(ARGS[0].split(",")),
    "workers_asleep_s_per_s": round(ns / 1e9 / secs, 2) if secs else None,
    "workers_asleep_pct": round(100 * ns / 1e9 / secs / len(ARGS[0].split(",")), 1) if secs else None,
    "accept_queue_mid_window": int(ss[1]) if len(ss) > 1 and ss[1].isdigit() else None,
}
text = (f"bpftrace while kiln ran ({secs:.1f} s, warm-up included): the {f['workers']} workers asleep in clock_nanosleep "
        f"{f['workers_asleep_s_per_s']} s per second ({f['workers_asleep_pct']}% of their time)\n"
        f"ss -ltn at mid-window: the listener's Recv-Q (accept queue) {f['accept_queue_mid_window']}\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 32 -d 30s "http://127.0.0.1:$SERVER_PORT/"
