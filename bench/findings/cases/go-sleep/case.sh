#!/bin/bash
# Planted: a sleep in the request path, in Go. Every request calls throttle, which sleeps
# 5 ms (time.Sleep: the goroutine parks on the runtime's timer, no thread sleeps), a
# goroutine per connection; kiln is given no --pprof (a new user's first run).
# Oracle: the server's own timing of throttle (GET /metrics at the window's ends: calls and
# summed duration) over the 16 connections' time; the server's CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

(cd "$CASE_DIR" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/sleepserver" .)
start_server server "$WORK/sleepserver"

snap_window "http://127.0.0.1:$SERVER_PORT/metrics" metrics
oracle_end() {
  oracle_py 16 << 'PY'
conns = int(ARGS[0])
a, b = window_json(WORK, "metrics")
secs = (b["now_ns"] - a["now_ns"]) / 1e9
calls = b["calls"] - a["calls"]
slept = (b["ns"] - a["ns"]) / 1e9
f = {
    "sleep_pct_of_request_time": round(100 * slept / (conns * secs), 1),
    "sleeps_per_s": round(calls / secs, 1),
    "sleep_ms_mean": round(1000 * slept / calls, 2) if calls else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"the server's own timing over {secs:.1f} s (GET /metrics): {calls} calls of throttle, "
        f"{f['sleep_ms_mean']} ms each: {f['sleep_pct_of_request_time']}% of the {conns} connections' time; "
        f"the server's CPU {f['server_cpu_pct']}% of a core\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
