#!/bin/bash
# Planted: a slow downstream, in Node. The front calls a local "inventory service" (another
# Node process answering after 20 ms) in every request (callInventoryService, http.get over
# a keep-alive agent); the event loop idles while its 16 clients' requests wait for the
# downstream. Started with the perf map flags README.md gives for Node.
# Oracle: the front's own timing of callInventoryService (GET /metrics at the window's ends:
# calls and summed duration, process.hrtime) over the 16 connections' time; the front's
# CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

start_server downstream env -C "$WORK" node "$ROOT/crates/findings/tests/programs/downstream_front.js" --inventory
DOWN_PORT=$SERVER_PORT
start_server server env -C "$WORK" node --perf-basic-prof --interpreted-frames-native-stack "$ROOT/crates/findings/tests/programs/downstream_front.js" "http://127.0.0.1:$DOWN_PORT/stock"

timed_oracle 16 callInventoryService downstream_wait

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
