#!/bin/bash
# Planted: a program run per request, in Java. An HttpServer (4 threads) whose handler
# runs `date +%s` for each answer (stampReceipt: ProcessBuilder, its output read to the
# end, waitFor); 4 connections, one per thread.
# Oracle: the server's own timing of stampReceipt (GET /metrics at the window's ends) over
# the 4 connections' time; /proc's cutime+cstime of the server (the children's CPU) in the
# universal sampler.
. "$(dirname "$0")/../../lib.sh"

mkdir "$WORK/classes"
javac -d "$WORK/classes" "$CASE_DIR/Receipts.java"
# -Dsun.net.httpserver.nodelay=true: as in java-gc (no delayed ACK per response).
start_server server java -Dsun.net.httpserver.nodelay=true -XX:+PreserveFramePointer -Xms128m -Xmx128m -cp "$WORK/classes" Receipts
warm_up "http://127.0.0.1:$SERVER_PORT/" 2

timed_oracle 4 stampReceipt spawn

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 4 -d 30s "http://127.0.0.1:$SERVER_PORT/"
