#!/bin/bash
# Planted: a timer in the request path, in Node. The server (downstream_front.js
# --throttle) holds every request 20 ms in waitForRateLimit (setTimeout): no thread works
# or waits on the requests, and it calls no one — its event loop idles between timers.
# Started with the perf map flag README.md gives for Node.
# Oracle: the server's own timing of waitForRateLimit (GET /metrics at the window's ends:
# calls and summed duration, process.hrtime) over the 16 connections' time; its CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

start_server server env -C "$WORK" node --perf-basic-prof "$ROOT/crates/findings/tests/programs/downstream_front.js" --throttle
timed_oracle 16 waitForRateLimit timer_wait
run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
