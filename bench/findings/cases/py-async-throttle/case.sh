#!/bin/bash
# Planted: a timer in the request path, in Python's asyncio. A single-threaded asyncio
# server (Debian's python3; py-async-downstream's server.py --throttle) holds every request
# 20 ms in wait_for_rate_limit (asyncio.sleep): no thread works or waits on the requests,
# and the server calls no one — its event loop idles between timers.
# Oracle: the server's own timing of wait_for_rate_limit (GET /metrics at the window's ends:
# calls and summed duration) over the 16 connections' time; the server's CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

start_server server "$PY" "$FINDINGS/cases/py-async-downstream/server.py" --throttle
timed_oracle 16 wait_for_rate_limit timer_wait
run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
