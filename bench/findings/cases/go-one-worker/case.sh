#!/bin/bash
# Planted: work serialised on one goroutine, in Go. Every request hands its hashing (about
# a millisecond) to one worker goroutine over a channel and waits for the answer; the
# worker runs on whichever thread the scheduler gives it, so no thread stands out.
# (The server is the test suite's: crates/findings/tests/programs/one_worker.)
# Oracle: Go's own tools over the same seconds: its CPU profile (GET
# /debug/pprof/profile?seconds=D, read with `go tool pprof -top -cum`: the CPU under
# main.worker) and its goroutine profile read twice a second (the goroutines in
# main.worker, and in main.handle waiting for it).
. "$(dirname "$0")/../../lib.sh"

SRC="$CASE_DIR/../../../../crates/findings/tests/programs/one_worker"
(cd "$SRC" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/one_worker" .)
start_server server "$WORK/one_worker"

oracle_window() {
  curl -sS --max-time $((D + 20)) -o "$WORK/cpu.pb.gz" "http://127.0.0.1:$SERVER_PORT/debug/pprof/profile?seconds=$D" &
  local end=$(($(date +%s) + D))
  local i=0
  while [ "$(date +%s)" -lt "$end" ]; do
    curl -sS --max-time 5 -o "$WORK/goroutines.$i.txt" "http://127.0.0.1:$SERVER_PORT/debug/pprof/goroutine?debug=1" || true
    i=$((i + 1))
    sleep 0.5
  done
  wait
}
oracle_end() {
  go tool pprof -top -cum "$WORK/cpu.pb.gz" > "$WORK/cpu.top" 2> "$WORK/cpu.top.err" || true
  oracle_py "$D" << 'PY'
import glob, statistics
d = float(ARGS[0])
top = open(os.path.join(WORK, "cpu.top")).read()
worker = 0.0
for line in top.splitlines():
    w = line.split()
    if len(w) >= 6 and w[5] == "main.worker":
        worker = go_duration(w[3])
workers, handling = [], []
for path in sorted(glob.glob(os.path.join(WORK, "goroutines.*.txt"))):
    n, seen, by = 0, set(), {}
    for line in open(path):
        if " @ " in line:
            n, seen = int(line.split(" @ ")[0] or 0), set()
        elif line.startswith("#\t"):
            func = line.split("\t")[2].split("+")[0]
            if func.startswith("main.") and func not in seen:
                by[func] = by.get(func, 0) + n
                seen.add(func)
    workers.append(by.get("main.worker", 0))
    handling.append(by.get("main.handle", 0))
f = {
    "worker_cpu_pct": round(100 * worker / d, 1),
    "worker_goroutines_max": max(workers) if workers else None,
    "handlers_waiting_median": statistics.median(handling) if handling else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
    "hottest_thread_cpu_pct": PROC.get("hottest_thread_cpu_pct"),
}
text = (f"Go's CPU profile over the window (go tool pprof -top -cum): main.worker {worker:.2f} s of {d:.0f} s "
        f"= {f['worker_cpu_pct']}% of a CPU\n"
        f"Go's goroutine profile, {len(workers)} reads: goroutines in main.worker at most {f['worker_goroutines_max']}, "
        f"in main.handle (waiting for it) median {f['handlers_waiting_median']}\n\n"
        + "\n".join(top.splitlines()[:14]) + "\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load http -c 24 -d 30s "http://127.0.0.1:$SERVER_PORT/"
