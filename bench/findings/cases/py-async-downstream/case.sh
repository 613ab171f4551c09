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

timed_oracle 16 call_inventory_service downstream_wait

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
