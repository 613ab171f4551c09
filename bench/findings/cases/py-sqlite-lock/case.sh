#!/bin/bash
# Planted: writers queueing for an SQLite database's lock. A thread-per-connection HTTP
# server (Debian's python3) counts each view in one SQLite file (count_view: BEGIN
# IMMEDIATE, an UPDATE, COMMIT), each thread on its own connection: one writes at a time,
# the other 15 wait in SQLite's busy handler, which sleeps between tries.
# Oracle: the server's own account (GET /stats at the window's ends: the time its views
# spent in count_view, time.monotonic_ns around it), over the 16 connection threads' time;
# the server's CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

start_server server "$PY" "$CASE_DIR/server.py" "$WORK/views.db"

snap_window "http://127.0.0.1:$SERVER_PORT/stats"
oracle_end() {
  oracle_py 16 << 'PY'
conns = int(ARGS[0])
a, b = window_json(WORK)
secs = (b["now_ns"] - a["now_ns"]) / 1e9
views = b["views"] - a["views"]
spent = (b["count_ns"] - a["count_ns"]) / 1e9
f = {
    "count_view_pct_of_request_time": round(100 * spent / (conns * secs), 1),
    "views_per_s": round(views / secs, 1),
    "count_view_ms_mean": round(1000 * spent / views, 2) if views else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"the server's own account over {secs:.1f} s (GET /stats): {views} views, "
        f"{f['count_view_ms_mean']} ms each in count_view (the SQLite write, its lock's wait "
        f"included): {f['count_view_pct_of_request_time']}% of the {conns} connection threads' time\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
