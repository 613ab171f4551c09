#!/bin/bash
# Planted: memory growth in Python. A single-threaded asyncio server (Debian's python3)
# keeps an 8 KiB bytearray per request in a list nothing empties (remember_session);
# 2,000 requests a second.
# Oracle: the server's RSS from /proc/PID/stat, sampled twice a second (growth per second
# over the window), and the interpreter's own account (GET /metrics: the bytes the list
# keeps, at the window's ends).
. "$(dirname "$0")/../../lib.sh"

start_server server "$PY" "$CASE_DIR/server.py"
heap_oracle 'kept'

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -R 2000 -d 30s "http://127.0.0.1:$SERVER_PORT/"
