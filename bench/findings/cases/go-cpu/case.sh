#!/bin/bash
# Planted: a CPU-bound server, in Go. The handler signs each receipt with ~0.7 ms of
# SHA-256 (signReceipt) on every CPU the machine has (GOMAXPROCS as Go sets it); 16
# clients keep it busy, and the load generator shares the machine's CPUs with it.
# Oracle: the runtime's own CPU profile over the window (GET /debug/pprof/profile?seconds=D,
# `go tool pprof -top -cum`: its CPU time, and main.signReceipt's share of it); the
# machine's CPUs (/proc).
. "$(dirname "$0")/../../lib.sh"

(cd "$CASE_DIR" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/receiptserver" .)
start_server server "$WORK/receiptserver"

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
sign = 0.0
for line in top.splitlines():
    w = line.split()
    if len(w) >= 6 and w[5] == "main.signReceipt":
        sign = go_duration(w[3])
f = {
    "gomaxprocs": procs,
    "go_cpu_pct_of_a_core": round(100 * total / d, 1) if total is not None else None,
    "sign_receipt_pct_of_cpu": round(100 * sign / total, 1) if total else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
    "runq_wait_ms_per_s": PROC.get("target_runq_wait_ms_per_s"),
}
text = (f"Go's CPU profile over the window (go tool pprof -top -cum): {total} s of CPU in {d:.0f} s = "
        f"{f['go_cpu_pct_of_a_core']}% of a core (GOMAXPROCS {procs}); main.signReceipt "
        f"{f['sign_receipt_pct_of_cpu']}% of it\n\n" + "\n".join(top.splitlines()[:12]) + "\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
