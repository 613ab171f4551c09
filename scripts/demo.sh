#!/usr/bin/env bash
# kiln's main job, end to end, on a real broker: a private RabbitMQ from Debian's package
# (the Erlang JIT with +JPperf map: its perf map and frame pointers; on 127.0.0.1 and free ports, in its own directory),
# driven by `kiln load amqp` and profiled by one `kiln run` of two interleaved variants:
# before and after one real configuration change (RabbitMQ's firehose tracer,
# `rabbitmqctl trace_on`, which copies every message to amq.rabbitmq.trace), in ABBA
# rounds so that a machine that drifts moves both alike; then `kiln compare`, which pairs
# the runs by round. Everything lands in ./kiln-demo/: the run store, each variant's report
# (before.html, after.html: the load's timeline and the flame graphs, pick a window), the
# comparison (compare.html, text, Markdown, differential flame graph).
#
#   scripts/demo.sh [SECONDS] [ROUNDS]    (measurement per run, default 5; rounds of one
#                                          run per variant, default 6: the fewest whose
#                                          paired test can reach p < 0.05)
set -euo pipefail
cd "$(dirname "$0")/.."
kiln=${KILN:-target/release/kiln}
secs=${1:-5}
repeat=${2:-6}
out=kiln-demo
mkdir -p "$out"
export KILN_STORE="$out/runs.db"

[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || {
  echo "demo: rabbitmq-server not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
dir=$(mktemp -d /tmp/kiln-demo-rabbitmq.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
broker=bench/amqp/broker.sh   # a private node: own directories, cookie and epmd, 127.0.0.1
cleanup() { "$broker" stop "$dir/broker" >/dev/null 2>&1 || true; rm -rf "$dir" "/tmp/perf-${beam:-none}.map"; }
trap cleanup EXIT
echo "demo: starting a private RabbitMQ on 127.0.0.1:$port (+JPperf map)" >&2
beam=$(BROKER_ERL_ARGS="+JPperf map" "$broker" start "$dir/broker" "$port")
uri="amqp://guest:guest@127.0.0.1:$port"
# The variants' set-up commands run through sh -c: one script reaches the private node.
printf '#!/bin/sh\nHOME=%q ERL_EPMD_PORT=%s ERL_EPMD_ADDRESS=127.0.0.1 exec /usr/lib/rabbitmq/bin/rabbitmqctl -q -n kilnbench@localhost "$@"\n' \
  "$dir/broker/home" $((port + 3)) >"$dir/ctl"
chmod +x "$dir/ctl"

load=(load amqp -h "$uri" -x 1 -y 0 -c 2000 -f persistent --queue kiln-demo --queue-args x-queue-type=stream --auto-delete false)
echo "== kiln run: 'before' (tracing off) and 'after' (rabbitmqctl trace_on: the firehose copies every message), interleaved in $repeat rounds of ${secs} s against $uri, profiled (pid $beam)" >&2
# Each run's own variant sets the tracer as it needs (no --after-each: every rabbitmqctl
# boots an Erlang VM, a second or two of CPU each on two cores).
"$kiln" run --variant before="$dir/ctl trace_off" --variant after="$dir/ctl trace_on" \
  --repeat "$repeat" -p "$beam" -e cpu --no-report \
  -d "$secs" --warmup 3 "${load[@]}" | tee "$out/run.txt" || true
echo "== the run reports" >&2
"$kiln" runs report before -o "$out/before.html"
"$kiln" runs report after -o "$out/after.html"
echo "== kiln compare before after" >&2
"$kiln" compare before after -o "$out/compare.html" | tee "$out/compare.txt"
"$kiln" compare before after --format markdown -o "$out/compare.md" >/dev/null
"$kiln" compare before after -o "$out/compare.svg" >/dev/null
"$kiln" flamegraph --merge-threads run:after -o "$out/after.cpu.html"
echo "kiln demo: wrote $out/ (runs.db, run.txt, before.html, after.html, compare.html, compare.txt, compare.md, compare.svg, after.cpu.html)" >&2
