#!/usr/bin/env bash
# kiln's main job, end to end, on a real broker: a private RabbitMQ from Debian's package
# (the Erlang JIT with +JPperf map: its perf map and frame pointers; on 127.0.0.1 and free ports, in its own directory),
# driven by `kiln load amqp` and profiled by `kiln run` twice — before and after one real
# configuration change (RabbitMQ's firehose tracer, `rabbitmqctl trace_on`, which copies
# every message to amq.rabbitmq.trace) — then `kiln compare`. Everything lands in
# ./kiln-demo/: the run store, each run's report (before.html, after.html: the load's
# timeline and the flame graphs, pick a window), the comparison (compare.html, text,
# Markdown, differential flame graph).
#
#   scripts/demo.sh [SECONDS] [REPEATS]   (measurement per run, default 5; runs per side,
#                                          default 4: the fewest that can show a change)
set -euo pipefail
cd "$(dirname "$0")/.."
kiln=${KILN:-target/release/kiln}
secs=${1:-5}
repeat=${2:-4}
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
ctl() {
  HOME="$dir/broker/home" ERL_EPMD_PORT=$((port + 3)) ERL_EPMD_ADDRESS=127.0.0.1 \
    /usr/lib/rabbitmq/bin/rabbitmqctl -n kilnbench@localhost "$@"
}
uri="amqp://guest:guest@127.0.0.1:$port"

load=(load amqp -h "$uri" -x 1 -y 0 -c 2000 -f persistent --queue kiln-demo --queue-args x-queue-type=stream --auto-delete false)
echo "== kiln run 'before': ${secs} s of $uri under load, profiled (pid $beam)" >&2
"$kiln" run --name before --note "tracing off" --repeat "$repeat" -p "$beam" -e cpu --no-report \
  -d "$secs" --warmup 3 "${load[@]}" | tee "$out/before.txt" || true
echo "== one real change: rabbitmqctl trace_on (the firehose copies every message)" >&2
ctl -q trace_on >/dev/null
echo "== kiln run 'after'" >&2
"$kiln" run --name after --note "firehose tracing on" --tag tracing=on --repeat "$repeat" -p "$beam" -e cpu --no-report \
  -d "$secs" --warmup 3 "${load[@]}" | tee "$out/after.txt" || true
ctl -q trace_off >/dev/null
echo "== the run reports" >&2
"$kiln" runs report before -o "$out/before.html"
"$kiln" runs report after -o "$out/after.html"
echo "== kiln compare before after" >&2
"$kiln" compare before after -o "$out/compare.html" | tee "$out/compare.txt"
"$kiln" compare before after --format markdown -o "$out/compare.md" >/dev/null
"$kiln" compare before after -o "$out/compare.svg" >/dev/null
"$kiln" flamegraph --merge-threads run:after -o "$out/after.cpu.html"
echo "kiln demo: wrote $out/ (runs.db, before.html, after.html, compare.html, compare.txt, compare.md, compare.svg, after.cpu.html)" >&2
