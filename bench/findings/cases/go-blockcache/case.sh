#!/bin/bash
# Planted: a lock held around a disk read, in Go. The repository's examples/go-blockcache
# with a 4 MiB cache: nearly every query misses and reads its 256 KiB block with O_DIRECT
# while holding the cache's one sync.Mutex (blockCache.get); 32 connections queue for it.
# Oracle: Go's own block profile of the same seconds (GET /debug/pprof/block?seconds=D, a
# delta), read with `go tool pprof -top -cum`: the delay of goroutines blocked under
# main.(*blockCache).get.
. "$(dirname "$0")/../../lib.sh"

(cd "$ROOT/examples/go-blockcache" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -o "$WORK/go-blockcache" .)
start_server server "$WORK/go-blockcache" -addr 127.0.0.1:0 -cache-mb 4 -mutex-profile-fraction 1 -block-profile-rate 1

go_block_oracle 'main.(*blockCache).get' 32 lock_wait

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" --pprof "http://127.0.0.1:$SERVER_PORT/debug/pprof/" \
  load http -c 32 -d 30s "http://127.0.0.1:$SERVER_PORT/query?city={rand:0-1023}"
