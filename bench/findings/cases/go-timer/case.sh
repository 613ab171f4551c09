#!/bin/bash
# Planted: a sleep in the request path, in Go, written as a wait on a timer's channel.
# Every request calls throttle, which receives from time.After(5 ms) (the goroutine parks
# in a channel receive the runtime's timer sends to: no lock, no thread asleep), a
# goroutine per connection; kiln is given no --pprof (a new user's first run).
# Oracle: the server's own timing of throttle (GET /metrics at the window's ends: calls and
# summed duration) over the 16 connections' time; the server's CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

# go-sleep's server, with -after.
(cd "$CASE_DIR/../go-sleep" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/sleepserver" .)
start_server server "$WORK/sleepserver" -after

timed_oracle 16 throttle sleep

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
