#!/bin/bash
# Planted: garbage collection. A Go server whose handler builds each answer from 5,000
# small objects (buildCatalogue), run with GOGC=10: the collector runs all the time.
# Oracle: the runtime's own CPU accounting (runtime/metrics /cpu/classes/gc/total and
# /cpu/classes/total, less idle), served by the program at /metrics, read at the window's
# start and end; GODEBUG=gctrace=1's lines are kept in the server's stderr.
. "$(dirname "$0")/../../lib.sh"

(cd "$CASE_DIR" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/gcserver" .)
start_server server env GOGC=10 GODEBUG=gctrace=1 "$WORK/gcserver"

oracle_window() {
  snap "$WORK/metrics.0" curl -sS --max-time 5 "http://127.0.0.1:$SERVER_PORT/metrics"
  sleep "$D"
  snap "$WORK/metrics.1" curl -sS --max-time 5 "http://127.0.0.1:$SERVER_PORT/metrics"
}
oracle_end() {
  oracle_py << 'PY'
(ta, a), (tb, b) = read_snap(os.path.join(WORK, "metrics.0")), read_snap(os.path.join(WORK, "metrics.1"))
a, b, d = json.loads(a), json.loads(b), (tb - ta) / 1e9
delta = {k: b[k] - a[k] for k in a}
gc = delta["/cpu/classes/gc/total:cpu-seconds"]
used = delta["/cpu/classes/total:cpu-seconds"] - delta["/cpu/classes/idle:cpu-seconds"]
f = {
    "gc_cpu_pct_of_used": round(100 * gc / used, 1) if used > 0 else None,
    "gc_cpus": round(gc / d, 2),
    "gc_cycles_per_s": round(delta["/gc/cycles/total:gc-cycles"] / d, 1),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"runtime/metrics over the window: GC {gc:.2f} CPU-s of {used:.2f} used ({f['gc_cpu_pct_of_used']}%), "
        f"{f['gc_cycles_per_s']} cycles/s\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" --pprof "http://127.0.0.1:$SERVER_PORT/debug/pprof/" \
  load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
