#!/bin/bash
# Planted: a concurrency limit inside the server, in Go. A buffered channel of 4 slots is
# its semaphore; each request holds one for 10 ms; 32 connections queue on the channel.
# Oracle: Go's own block profile of the same seconds (GET /debug/pprof/block?seconds=D, a
# delta), read with `go tool pprof -top -cum`: the delay of goroutines blocked under
# main.handle (sending to the channel), over the connections' time.
. "$(dirname "$0")/../../lib.sh"

(cd "$CASE_DIR" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/semaphore" .)
start_server server "$WORK/semaphore" -addr 127.0.0.1:0

go_block_oracle main.handle 32 slot_wait

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" --pprof "http://127.0.0.1:$SERVER_PORT/debug/pprof/" \
  load http -c 32 -d 30s "http://127.0.0.1:$SERVER_PORT/"
