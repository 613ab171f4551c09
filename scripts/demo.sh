#!/usr/bin/env bash
# kiln's main job, end to end, on a real broker: a private RabbitMQ from Debian's package
# (the Erlang JIT with +JPperf true, on 127.0.0.1 and free ports, in its own directory),
# driven by `kiln load amqp` and profiled by `kiln run` twice — before and after one real
# configuration change (RabbitMQ's firehose tracer, `rabbitmqctl trace_on`, which copies
# every message to amq.rabbitmq.trace) — then `kiln compare`. Everything lands in
# ./kiln-demo/: the run store, the comparison (text, Markdown, differential flame graph).
#
#   scripts/demo.sh [SECONDS]      (measurement per run; default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
kiln=${KILN:-target/release/kiln}
secs=${1:-10}
out=kiln-demo
mkdir -p "$out"
export KILN_STORE="$out/runs.db"

for p in /usr/lib/rabbitmq/bin/rabbitmq-server /usr/lib/rabbitmq/bin/rabbitmqctl; do
  [ -x "$p" ] || { echo "demo: $p not found (scripts/install-deps.sh installs rabbitmq-server)" >&2; exit 1; }
done
epmd_bin=$(command -v epmd || ls /usr/lib/erlang/erts-*/bin/epmd 2>/dev/null | head -1)
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

dir=$(mktemp -d /tmp/kiln-demo-rabbitmq.XXXXXX)
port=$(free_port); dist=$(free_port); epmd_port=$(free_port)
mkdir -p "$dir/home"
printf 'KILNDEMO%s' "$RANDOM$RANDOM" > "$dir/home/.erlang.cookie"
chmod 600 "$dir/home/.erlang.cookie"
echo "loopback_users = none" > "$dir/rabbitmq.conf"
echo "[]." > "$dir/enabled_plugins"
: > "$dir/rabbitmq-env.conf"
export HOME="$dir/home" RABBITMQ_NODENAME="kilndemo$$@localhost" ERL_EPMD_PORT="$epmd_port" \
  ERL_EPMD_ADDRESS=127.0.0.1 RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf" \
  RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
  RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/log" RABBITMQ_PID_FILE="$dir/rabbit.pid" \
  RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$port" RABBITMQ_DIST_PORT="$dist" \
  RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='+JPperf true -kernel inet_dist_use_interface {127,0,0,1}'
ctl() { /usr/lib/rabbitmq/bin/rabbitmqctl -n "$RABBITMQ_NODENAME" "$@"; }

"$epmd_bin" -port "$epmd_port" -address 127.0.0.1 >/dev/null 2>&1 &
epmd_pid=$!
/usr/lib/rabbitmq/bin/rabbitmq-server > "$dir/console.log" 2>&1 &
server_pid=$!
beam=""
cleanup() {
  # Stop what this script started, by PID.
  [ -n "$beam" ] && kill "$beam" 2>/dev/null || true
  kill "$server_pid" 2>/dev/null || true
  sleep 1
  [ -n "$beam" ] && kill -9 "$beam" 2>/dev/null || true
  kill "$epmd_pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
echo "demo: starting a private RabbitMQ on 127.0.0.1:$port (+JPperf true)" >&2
started=""
for _ in $(seq 120); do
  kill -0 "$server_pid" 2>/dev/null || break
  if ctl -q await_startup --timeout 5 >/dev/null 2>&1; then started=1; break; fi
  sleep 1
done
if [ -z "$started" ]; then
  echo "demo: RabbitMQ did not start; its log:" >&2
  tail -20 "$dir/console.log" >&2
  exit 1
fi
beam=$(cat "$dir/rabbit.pid")
uri="amqp://guest:guest@127.0.0.1:$port"

load=(load amqp -h "$uri" -x 1 -y 0 -c 2000 -f persistent --queue kiln-demo --queue-args x-queue-type=stream --auto-delete false)
echo "== kiln run 'before': ${secs} s of $uri under load, profiled (pid $beam)" >&2
"$kiln" run --name before --note "tracing off" -p "$beam" -e cpu \
  -d "$secs" --warmup 3 "${load[@]}" | tee "$out/before.txt" || true
echo "== one real change: rabbitmqctl trace_on (the firehose copies every message)" >&2
ctl -q trace_on >/dev/null
echo "== kiln run 'after'" >&2
"$kiln" run --name after --note "firehose tracing on" -p "$beam" -e cpu \
  -d "$secs" --warmup 3 "${load[@]}" | tee "$out/after.txt" || true
ctl -q trace_off >/dev/null
echo "== kiln compare before after" >&2
"$kiln" compare before after -o "$out/compare.html" | tee "$out/compare.txt"
"$kiln" compare before after --format markdown -o "$out/compare.md" >/dev/null
"$kiln" compare before after -o "$out/compare.svg" >/dev/null
"$kiln" flamegraph --merge-threads run:after -o "$out/after.cpu.html"
echo "kiln demo: wrote $out/ (runs.db, compare.txt, compare.md, compare.svg, compare.html, after.cpu.html)" >&2
