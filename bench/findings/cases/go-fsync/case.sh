#!/bin/bash
# Planted: a per-request fsync, in Go. A net/http server whose handler calls appendOrder,
# which writes a 512-byte record to the server's one order log (O_APPEND) and calls
# f.Sync() (fsync(2)) before answering; 16 connections, a goroutine each, and the goroutine
# holds its thread in the system call.
# Oracle: bpftrace, the calls and time of the server's fsync(2) (and fdatasync(2)) per
# second, over the 16 connections' time; write(2) calls (one log record and one response
# per request).
. "$(dirname "$0")/../../lib.sh"

(cd "$CASE_DIR" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/fsyncserver" .)
mkdir "$WORK/logs"
start_server server "$WORK/fsyncserver" "$WORK/logs"

fsync_oracle 16

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
