#!/bin/bash
# Planted: a per-request fdatasync, on the BEAM. An HTTP server (gen_tcp, a process per
# connection) whose every request appends a 512-byte record to one journal and forces it to
# the disk (file:datasync) before it answers (journal:append_order); the runtime runs the
# file's calls on its dirty I/O schedulers, and its normal schedulers wait for the answers.
# The node runs with +JPperf true (its JIT's perf map) and the runtime's default flags
# (its schedulers busy-wait when out of work).
# Oracle: bpftrace, the calls and time of the node's fdatasync(2) per second, over the 16
# connections' time; write(2) calls (one record and one response per request).
. "$(dirname "$0")/../../lib.sh"

# (The server is the test suite's: crates/findings/tests/programs/journal.erl.)
mkdir "$WORK/journal"
src="$ROOT/crates/findings/tests/programs"
erlc -o "$WORK" "$src/http_front.erl" "$src/journal.erl"
start_server server erl -noshell +JPperf true -pa "$WORK" -eval "journal:start(\"$WORK/journal\")"
warm_up "http://127.0.0.1:$SERVER_PORT/" 3

fsync_oracle 16

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
