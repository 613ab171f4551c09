#!/bin/bash
# Planted: memory growth in Go. Every request allocates an 8 KiB session, fills it and
# keeps it in a map nothing deletes from (rememberSession); 2,000 requests a second. The
# collector runs, and frees nothing of it.
# Oracle: the server's RSS from /proc/PID/stat, sampled twice a second (growth per second
# over the window), and the runtime's own account (runtime.ReadMemStats' live heap, at
# /metrics, at the window's ends).
. "$(dirname "$0")/../../lib.sh"

(cd "$CASE_DIR" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/leakserver" .)
start_server server "$WORK/leakserver"
heap_oracle 'heap_alloc'

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -R 2000 -d 30s "http://127.0.0.1:$SERVER_PORT/"
