#!/usr/bin/env bash
# Debian RabbitMQ (stripped beam.smp, OTP JIT with +JPperf true) under a steady publish load
# (kiln load amqp): (a) share of beam.smp CPU samples carrying an Erlang frame (`$...`),
# kiln record -p vs perf record -g -p + inferno-collapse-perf; (b) share of kiln's samples
# with no unresolved frame ([unknown], +0x) whose outermost frame is a thread root
# (clone/start_thread/_start) or an Erlang process entry ($erts_beamasm:normal_exit/0, $global::process_main).
# Usage: bench/record/rabbitmq.sh [SECONDS]   (default 15; needs perf_event_paranoid <= 1)
set -euo pipefail
secs=${1:-15}
root=$(cd "$(dirname "$0")/../.." && pwd)
kiln=${KILN:-$root/target/release/kiln}
work=$(mktemp -d)
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
node="kilnbench@localhost"
export HOME="$work/home" RABBITMQ_NODENAME="$node" ERL_EPMD_PORT=$((port + 3)) ERL_EPMD_ADDRESS=127.0.0.1 \
  RABBITMQ_CONF_ENV_FILE="$work/rabbitmq-env.conf" RABBITMQ_CONFIG_FILE="$work/rabbitmq.conf" \
  RABBITMQ_ENABLED_PLUGINS_FILE="$work/enabled_plugins" RABBITMQ_MNESIA_BASE="$work/mnesia" \
  RABBITMQ_LOG_BASE="$work/log" RABBITMQ_PID_FILE="$work/rabbit.pid"
mkdir -p "$HOME"
printf 'KILNBENCH%s' "$port" > "$HOME/.erlang.cookie"; chmod 600 "$HOME/.erlang.cookie"
printf 'loopback_users = none\n' > "$work/rabbitmq.conf"
echo '[].' > "$work/enabled_plugins"; : > "$work/rabbitmq-env.conf"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  /usr/lib/rabbitmq/bin/rabbitmqctl -n "$node" shutdown >/dev/null 2>&1 \
    || { [ -s "$work/rabbit.pid" ] && kill -KILL "$(cat "$work/rabbit.pid")" 2>/dev/null; } || true
  [ -n "${epmd:-}" ] && kill "$epmd" 2>/dev/null || true
  [ -n "${KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
/usr/bin/epmd -port $((port + 3)) -address 127.0.0.1 >/dev/null 2>&1 & epmd=$!
RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT=$port RABBITMQ_DIST_PORT=$((port + 1)) \
  RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} +JPperf true" \
  /usr/lib/rabbitmq/bin/rabbitmq-server > "$work/console.log" 2>&1 &
i=0
until /usr/lib/rabbitmq/bin/rabbitmqctl -n "$node" await_startup --timeout 20 >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -lt 120 ] || { tail -20 "$work/console.log" >&2; exit 1; }; sleep 0.5
done
i=0; until [ -s "$work/rabbit.pid" ] || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.1; done
beam=$(cat "$work/rabbit.pid")
[ -s "/tmp/perf-$beam.map" ] || echo "warning: /tmp/perf-$beam.map missing (+JPperf not applied?)" >&2
"$kiln" load amqp --uri "amqp://guest:guest@127.0.0.1:$port" -x 1 -y 1 -r 5000 -z 40 >"$work/load.log" 2>&1 &
pids+=($!)
sleep 3
"$kiln" record -p "$beam" -d "$secs" -o "$work/kiln.folded" 2>"$work/kiln.err"
perf record -q -g -F 999 -p "$beam" -o "$work/perf.data" -- sleep "$secs" 2>/dev/null
perf script -i "$work/perf.data" 2>/dev/null | inferno-collapse-perf >"$work/perf.folded"
share() { awk '{n=$NF; t+=n; if ($0 ~ /(^|;)\$[^;]*/) e+=n} END {printf "%.0f %.0f\n", e, t}'; }
read -r ke kt < <(share <"$work/kiln.folded")
read -r pe pt < <(share <"$work/perf.folded")
read -r ce ct < <(awk '{n=$NF; t+=n; s=$0; sub(/ [0-9]+$/, "", s); k=split(s, f, ";")
  ok=1; for (j=2; j<=k; j++) if (f[j] ~ /\[unknown\]|\+0x/) ok=0
  if (f[2] !~ /^(__?clone3?|start_thread|_start|__libc_start_main|__libc_start_call_main|\$erts_beamasm:normal_exit\/0|\$global::process_main)$/) ok=0
  if (ok) c+=n} END {printf "%.0f %.0f\n", c, t}' "$work/kiln.folded")
pct() { echo "scale=1; 100 * $1 / $2" | bc -l; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); beam.smp pid $beam; ${secs}s each"
printf '%-28s %12s %12s %8s\n' metric kiln perf ratio
kp=$(pct "$ke" "$kt"); pp=$(pct "$pe" "$pt")
printf '%-28s %11s%% %11s%% %8s\n' "(a) Erlang-frame share" "$kp" "$pp" "$(echo "scale=2; $kp / $pp" | bc -l)"
printf '%-28s %11s%% %12s\n' "(b) complete-stack share" "$(pct "$ce" "$ct")" "-"
echo "kiln $ke/$kt samples; perf $pe/$pt (inferno weight); load: $(tail -1 "$work/load.log")"
