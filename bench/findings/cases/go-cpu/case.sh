#!/bin/bash
# Planted: a CPU-bound server, in Go. go-maxprocs's server (about a millisecond of
# hashing per request in priceQuote) on every CPU the machine has (GOMAXPROCS as Go sets
# it); 16 clients keep it busy, and the load generator shares the machine's CPUs with it.
# Oracle: the runtime's own CPU profile over the window (lib.sh's go_cpu_oracle: its CPU
# time, and main.priceQuote's share of it); the machine's CPUs (/proc).
. "$(dirname "$0")/../../lib.sh"

(cd "$CASE_DIR/../go-maxprocs" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/quoteserver" .)
start_server server "$WORK/quoteserver"

go_cpu_oracle main.priceQuote

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
