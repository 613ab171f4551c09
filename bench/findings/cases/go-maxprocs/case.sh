#!/bin/bash
# Planted: a runtime held to one CPU. A Go server whose handler hashes for about a
# millisecond (priceQuote), run with GOMAXPROCS=1 on a machine of two CPUs or more: Go
# code runs on one thread at a time, and requests wait in the runtime's run queue, which
# no thread's state shows.
# Oracle: the runtime's own tools over the same seconds (lib.sh's go_cpu_oracle): its CPU
# profile (its total CPU time, and main.priceQuote's) and GOMAXPROCS as the runtime says
# it (runtime.GOMAXPROCS(0), served by the program at /gomaxprocs).
. "$(dirname "$0")/../../lib.sh"

(cd "$CASE_DIR" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/quoteserver" .)
start_server server env GOMAXPROCS=1 "$WORK/quoteserver"

go_cpu_oracle main.priceQuote

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
