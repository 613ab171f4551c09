#!/bin/bash
# Planted: requests queued on one sync.Mutex in Go, and kiln given none of the program's
# profiles (no --pprof): every request takes the mutex and holds it over a 2 ms wait, so
# 24 connections queue for it; the waiting goroutines park in Go's scheduler and block no
# thread. (The server is the test suite's: crates/findings/tests/programs/go_mutex.)
# Oracle: Go's own block profile of the same seconds (GET /debug/pprof/block?seconds=D, a
# delta), read with `go tool pprof -top -cum`: the delay of goroutines blocked under
# main.updateInventory over the connections' time.
. "$(dirname "$0")/../../lib.sh"

SRC="$CASE_DIR/../../../../crates/findings/tests/programs/go_mutex"
(cd "$SRC" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/go_mutex" .)
start_server server "$WORK/go_mutex"

go_block_oracle main.updateInventory 24 lock_wait

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load http -c 24 -d 30s "http://127.0.0.1:$SERVER_PORT/"
