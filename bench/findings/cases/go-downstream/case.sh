#!/bin/bash
# Planted: a slow downstream, in Go. The front (net/http, a goroutine per connection)
# asks a local "inventory service" (another process, 20 ms per answer) in every request
# (callInventoryService, http.Client over keep-alive connections) and answers; its 16
# clients' requests spend their time waiting for the downstream, the goroutines parked in
# Go's network poller, the front's threads idle.
# Oracle: the front's own timing of callInventoryService (GET /metrics, calls and summed
# duration, read at the window's ends) over the 16 connections' time; Go's goroutine
# profile twice a second (GET /debug/pprof/goroutine?debug=1): the goroutines under
# main.callInventoryService; the front's CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

(cd "$CASE_DIR" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/downstream" .)
start_server downstream "$WORK/downstream" -serve-inventory
DOWN_PORT=$SERVER_PORT
start_server server "$WORK/downstream" "http://127.0.0.1:$DOWN_PORT/stock"

oracle_window() {
  snap "$WORK/metrics.0" curl -sS --max-time 5 "http://127.0.0.1:$SERVER_PORT/metrics"
  local end=$(($(date +%s) + D))
  local i=0
  while [ "$(date +%s)" -lt "$end" ]; do
    curl -sS --max-time 5 -o "$WORK/goroutines.$i.txt" "http://127.0.0.1:$SERVER_PORT/debug/pprof/goroutine?debug=1" || true
    i=$((i + 1))
    sleep 0.5
  done
  snap "$WORK/metrics.1" curl -sS --max-time 5 "http://127.0.0.1:$SERVER_PORT/metrics"
}
oracle_end() {
  oracle_py 16 << 'PY'
import glob, statistics
conns = int(ARGS[0])
(ta, a), (tb, b) = read_snap(os.path.join(WORK, "metrics.0")), read_snap(os.path.join(WORK, "metrics.1"))
a, b, d = json.loads(a), json.loads(b), (tb - ta) / 1e9
calls = b["downstream_calls"] - a["downstream_calls"]
waited = (b["downstream_ns"] - a["downstream_ns"]) / 1e9
in_call = []
for path in sorted(glob.glob(os.path.join(WORK, "goroutines.*.txt"))):
    n, total, seen = 0, 0, False
    for line in open(path):
        if " @ " in line:
            n, seen = int(line.split(" @ ")[0] or 0), False
        elif line.startswith("#\t") and not seen and line.split("\t")[2].split("+")[0] == "main.callInventoryService":
            total += n
            seen = True
    in_call.append(total)
f = {
    "downstream_wait_pct_of_request_time": round(100 * waited / (conns * d), 1),
    "downstream_calls_per_s": round(calls / d, 1),
    "downstream_ms_mean": round(1000 * waited / calls, 2) if calls else None,
    "goroutines_in_call_median": statistics.median(in_call) if in_call else None,
    "goroutines_in_call_pct_of_conns": round(100 * statistics.median(in_call) / conns, 1) if in_call else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"the front's own timing over {d:.1f} s: {calls} downstream calls ({f['downstream_calls_per_s']}/s), "
        f"{f['downstream_ms_mean']} ms each, {waited:.1f} s = {f['downstream_wait_pct_of_request_time']}% of the {conns} connections' time\n"
        f"Go's goroutine profile, {len(in_call)} reads: goroutines under main.callInventoryService median "
        f"{f['goroutines_in_call_median']} of {conns} connections\n"
        f"the front's CPU: {f['server_cpu_pct']}% of a core\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
