#!/bin/bash
# Planted: a runtime held to one CPU. A Go server whose handler hashes for about a
# millisecond (priceQuote), run with GOMAXPROCS=1 on a machine of two CPUs or more: Go
# code runs on one thread at a time, and requests wait in the runtime's run queue, which
# no thread's state shows.
# Oracle: the runtime's own tools over the same seconds: its CPU profile (GET
# /debug/pprof/profile?seconds=D, read with `go tool pprof -top -cum`: its total CPU time,
# and main.priceQuote's) and GOMAXPROCS as the runtime says it (runtime.GOMAXPROCS(0),
# served by the program at /gomaxprocs). (runtime/metrics' CPU classes are no account
# here: they count a P's time while its thread waits for a CPU.)
. "$(dirname "$0")/../../lib.sh"

(cd "$CASE_DIR" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/quoteserver" .)
start_server server env GOMAXPROCS=1 "$WORK/quoteserver"

oracle_window() {
  curl -sS --max-time $((D + 20)) -o "$WORK/cpu.pb.gz" "http://127.0.0.1:$SERVER_PORT/debug/pprof/profile?seconds=$D"
  curl -sS --max-time 5 -o "$WORK/gomaxprocs.txt" "http://127.0.0.1:$SERVER_PORT/gomaxprocs"
}
oracle_end() {
  go tool pprof -top -cum "$WORK/cpu.pb.gz" > "$WORK/cpu.top" 2> "$WORK/cpu.top.err" || true
  oracle_py "$D" << 'PY'
import re
d = float(ARGS[0])
top = open(os.path.join(WORK, "cpu.top")).read()
procs = int(open(os.path.join(WORK, "gomaxprocs.txt")).read())
m = re.search(r"Total samples = (\S+)", top)
total = go_duration(m.group(1)) if m else None
quote = 0.0
for line in top.splitlines():
    w = line.split()
    if len(w) >= 6 and w[5] == "main.priceQuote":
        quote = go_duration(w[3])
f = {
    "gomaxprocs": procs,
    "go_cpu_pct_of_cap": round(100 * total / d / procs, 1) if total is not None and procs else None,
    "price_quote_pct_of_cpu": round(100 * quote / total, 1) if total else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
    "runq_wait_ms_per_s": PROC.get("target_runq_wait_ms_per_s"),
}
text = (f"Go's CPU profile over the window (go tool pprof -top -cum): {total} s of CPU in {d:.0f} s = "
        f"{f['go_cpu_pct_of_cap']}% of the {procs} CPU GOMAXPROCS lets it use (runtime.GOMAXPROCS); "
        f"main.priceQuote {f['price_quote_pct_of_cpu']}% of it\n\n" + "\n".join(top.splitlines()[:12]) + "\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
