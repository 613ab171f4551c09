#!/bin/bash
# Planted: a slow downstream, in Python's asyncio. A single-threaded asyncio front
# (Debian's python3) asks a local "inventory service" (another asyncio process answering
# after 20 ms) in every request (call_inventory_service: a new connection to "localhost",
# whose name asyncio resolves in its default executor's threads); the event loop idles
# while its 16 clients' requests wait for the downstream.
# Oracle: the front's own timing of call_inventory_service (GET /metrics at the window's
# ends: calls and summed duration) over the 16 connections' time; the front's CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

start_server downstream "$PY" "$CASE_DIR/server.py" --inventory
DOWN_PORT=$SERVER_PORT
start_server server "$PY" "$CASE_DIR/server.py" "$DOWN_PORT"

snap_window "http://127.0.0.1:$SERVER_PORT/metrics" metrics
oracle_end() {
  oracle_py 16 << 'PY'
conns = int(ARGS[0])
a, b = window_json(WORK, "metrics")
secs = (b["now_ns"] - a["now_ns"]) / 1e9
calls = b["calls"] - a["calls"]
waited = (b["ns"] - a["ns"]) / 1e9
f = {
    "downstream_wait_pct_of_request_time": round(100 * waited / (conns * secs), 1),
    "downstream_calls_per_s": round(calls / secs, 1),
    "downstream_ms_mean": round(1000 * waited / calls, 2) if calls else None,
    "front_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"the front's own timing over {secs:.1f} s (GET /metrics): {calls} calls of call_inventory_service, "
        f"{f['downstream_ms_mean']} ms each: {f['downstream_wait_pct_of_request_time']}% of the {conns} "
        f"connections' time; the front's CPU {f['front_cpu_pct']}% of a core\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
