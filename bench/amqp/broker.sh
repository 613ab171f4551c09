#!/bin/sh
# Starts (or stops) a private RabbitMQ node on 127.0.0.1 for benchmarks:
#   bench/amqp/broker.sh start DIR PORT   -> prints the beam.smp pid when ready
#   bench/amqp/broker.sh stop DIR
# Same isolation as kiln-testkit: own data/log/config dirs, cookie, epmd port.
# BROKER_ERL_ARGS adds emulator flags (e.g. "+JPperf map" for JIT perf maps and frame
# pointers, "+sbwt none"); BROKER_MQTT_PORT enables the MQTT plugin on that port;
# BROKER_CONF adds lines to rabbitmq.conf (e.g. "vm_memory_high_watermark.absolute = 200MB").
set -eu
cmd=$1 dir=$2
node="kilnbench@localhost"
envs() {
  export HOME="$dir/home" RABBITMQ_NODENAME="$node" ERL_EPMD_PORT=$((PORT + 3)) ERL_EPMD_ADDRESS=127.0.0.1 \
    RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf" RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" RABBITMQ_MNESIA_BASE="$dir/mnesia" \
    RABBITMQ_LOG_BASE="$dir/log" RABBITMQ_PID_FILE="$dir/rabbit.pid"
}
case $cmd in
start)
  PORT=$3
  mkdir -p "$dir/home"
  echo "$PORT" > "$dir/port"
  printf 'KILNBENCH%s' "$PORT" > "$dir/home/.erlang.cookie"; chmod 600 "$dir/home/.erlang.cookie"
  printf 'loopback_users = none\n' > "$dir/rabbitmq.conf"
  echo '[].' > "$dir/enabled_plugins"; : > "$dir/rabbitmq-env.conf"
  if [ -n "${BROKER_CONF:-}" ]; then printf '%s\n' "$BROKER_CONF" >> "$dir/rabbitmq.conf"; fi
  if [ -n "${BROKER_MQTT_PORT:-}" ]; then
    printf 'mqtt.listeners.tcp.default = 127.0.0.1:%s\nmqtt.allow_anonymous = true\n' "$BROKER_MQTT_PORT" >> "$dir/rabbitmq.conf"
    echo '[rabbitmq_mqtt].' > "$dir/enabled_plugins"
  fi
  envs
  /usr/bin/epmd -port $((PORT + 3)) -address 127.0.0.1 >/dev/null 2>&1 &
  echo $! > "$dir/epmd.pid"
  RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT=$PORT RABBITMQ_DIST_PORT=$((PORT + 1)) \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} ${BROKER_ERL_ARGS:-}" \
    /usr/lib/rabbitmq/bin/rabbitmq-server > "$dir/console.log" 2>&1 &
  echo $! > "$dir/wrapper.pid"
  i=0
  until /usr/lib/rabbitmq/bin/rabbitmqctl -n "$node" await_startup --timeout 20 >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 120 ] || { tail -20 "$dir/console.log" >&2; exit 1; }; sleep 0.5
  done
  i=0; until [ -s "$dir/rabbit.pid" ] || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.1; done
  cat "$dir/rabbit.pid"; echo
  ;;
stop)
  PORT=$(cat "$dir/port")
  envs
  /usr/lib/rabbitmq/bin/rabbitmqctl -n "$node" shutdown >/dev/null 2>&1 || kill -KILL "$(cat "$dir/rabbit.pid")" 2>/dev/null || true
  kill "$(cat "$dir/epmd.pid")" 2>/dev/null || true
  ;;
esac
