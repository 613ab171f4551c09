# Sourced by the recorder benchmarks that need a broker: starts a private Debian
# RabbitMQ on a free 127.0.0.1 port with the JIT's perf map and frame pointers
# (+JPperf map), and stops it (and any pid added to `bg`) on exit.
# Sets: root, kiln (built if missing), work (a temporary directory; KEEP=1 keeps it),
# port, uri, beam (the broker's beam.smp pid).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kiln=${KILN:-$root/target/release/kiln}
[ -x "$kiln" ] || (cd "$root" && cargo build --release -q -p kiln)
work=$(mktemp -d)
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
uri="amqp://guest:guest@127.0.0.1:$port"
bg=()
stop_broker() {
  for p in "${bg[@]}"; do kill "$p" 2>/dev/null || true; done
  "$root/bench/amqp/broker.sh" stop "$work/broker" || true
  rm -f "/tmp/perf-${beam:-none}.map"
  [ -n "${KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap stop_broker EXIT
beam=$(BROKER_ERL_ARGS="+JPperf map" "$root/bench/amqp/broker.sh" start "$work/broker" "$port")
[ -s "/tmp/perf-$beam.map" ] || echo "warning: /tmp/perf-$beam.map missing (+JPperf not applied?)" >&2
