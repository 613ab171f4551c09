#!/bin/bash
# Planted: memory growth in Node. Every request allocates an 8 KiB buffer, fills it and
# keeps it in an array nothing empties (rememberSession); 2,000 requests a second; started
# with the perf map flags README.md gives for Node.
# Oracle: the server's RSS from /proc/PID/stat, sampled twice a second (growth per second
# over the window), and Node's own account (process.memoryUsage(): heapUsed and
# arrayBuffers, at /metrics, at the window's ends).
. "$(dirname "$0")/../../lib.sh"

start_server server env -C "$WORK" node --perf-basic-prof --interpreted-frames-native-stack "$CASE_DIR/server.js"
heap_oracle 'heap_alloc'

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -R 2000 -d 30s "http://127.0.0.1:$SERVER_PORT/"
