#!/bin/sh
# kiln load mqtt against the anchors, same brokers, same run.
#
#   bench/mqtt/run.sh [CONNECTIONS] [IDLE_SECONDS] [MESSAGES]   (default 15000 30 200000)
#
# 1. The seed's idle fleet: CONNECTIONS connections with a 15 s keepalive, measured over
#    IDLE_SECONDS once all are connected, against a private mosquitto and a private RabbitMQ (MQTT plugin) with
#    +sbwt none (RabbitMQ's default) and +sbwt very_long, by kiln and by a minimal asyncio
#    client (pyfleet.py). Per case: connect rate, client RSS per connection, client CPU and
#    broker CPU (user/system, /proc) over the idle part, per 1,000 connections. Then where
#    the broker's CPU goes: `kiln run -p BROKER -w 25 -d 15 load mqtt conn …` (the fleet
#    under kiln run: broker CPU user/system and its top functions while idle).
# 2. Pub/sub through mosquitto, QoS 0 and 1, MESSAGES messages of 100 bytes, one publisher
#    and one subscriber: kiln pubsub vs mosquitto_pub -l + mosquitto_sub (the C clients of
#    libmosquitto; MQTT.js and paho-mqtt are slower clients): messages/s delivered and client
#    CPU per message (user+sys of all client processes), and messages received of those
#    sent.
# PARTS="mosquitto rabbitmq pubsub" (default all) chooses; RABBIT_PORT (default 25697) moves
# the private RabbitMQ off ports in use.
# Needs: mosquitto, mosquitto-clients, rabbitmq-server, python3, a release kiln ($KILN).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-15000}
hold=${2:-30}
msgs=${3:-200000}
kiln=${KILN:-$root/target/release/kiln}
[ -x "$kiln" ] || { echo "build kiln first: cargo build --release -p kiln (or set KILN)" >&2; exit 1; }
dir=$(mktemp -d /tmp/kiln-bench-mqtt.XXXXXX)
tck=$(getconf CLK_TCK)
mpid=
cleanup() {
  [ -z "$mpid" ] || kill "$mpid" 2>/dev/null || true
  [ ! -d "$dir/rabbit" ] || "$root/bench/amqp/broker.sh" stop "$dir/rabbit" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

start_mosquitto() {
  port=$1
  printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_connections -1\npersistence false\n' "$port" > "$dir/mosquitto.conf"
  /usr/sbin/mosquitto -c "$dir/mosquitto.conf" > "$dir/mosquitto.log" 2>&1 &
  mpid=$!
  i=0; until (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.1; done
}

# fleet BROKER_NAME BROKER_PID PORT CLIENT
fleet() {
  name=$1 bpid=$2 port=$3 client=$4
  b0=$(ticks "$bpid")
  # Both hold their fleet until stopped after the measurement.
  if [ "$client" = kiln ]; then
    "$kiln" load mqtt conn -h 127.0.0.1 -p "$port" -c "$n" -i 0 -k 15 -V 4 -o "$dir/fleet" > "$dir/fleet.out" 2>&1 &
  else
    python3 "$here/pyfleet.py" 127.0.0.1 "$port" "$n" 15 600 > "$dir/fleet.out" 2>&1 &
  fi
  cpid=$!
  # Wait until every connection is up (or 60 s), then measure the idle part.
  t0=$(date +%s.%N)
  i=0
  while [ "$(ls /proc/$cpid/fd 2>/dev/null | wc -l)" -lt "$n" ] && [ $i -lt 1800 ]; do i=$((i + 1)); sleep 0.1; done
  [ $i -lt 1800 ] || echo "# $name/$client: not all $n connections up after 180 s" >&2
  sleep 3
  c0=$(ticks "$cpid"); bi0=$(ticks "$bpid"); ti0=$(date +%s.%N)
  sleep "$hold"
  c1=$(ticks "$cpid"); bi1=$(ticks "$bpid"); ti1=$(date +%s.%N); crss=$(rss_kb "$cpid"); brss=$(rss_kb "$bpid")
  # SIGINT: kiln finishes and writes its report. (Background jobs of a script ignore SIGINT,
  # so the python client gets SIGTERM.)
  if [ "$client" = kiln ]; then kill -INT "$cpid"; else kill -TERM "$cpid"; fi
  wait "$cpid" || true
  idle=$(echo "$ti1 - $ti0" | bc -l)
  set -- $c0 $c1; cu=$(( $3 - $1 )); cs=$(( $4 - $2 ))
  set -- $bi0 $bi1; bu=$(( $3 - $1 )); bs=$(( $4 - $2 ))
  if [ "$client" = kiln ]; then
    rate=$(python3 -c "import json,sys; r=json.load(open('$dir/fleet.json')); s=r['series']; t=next((x['time_s'] for x in s if sum(y['connected'] for y in s[:s.index(x)+1])>=$n), None); print(f\"{$n/t:.0f}\" if t else 'n/a')")
    perconn=$(echo "($crss - $kiln_base) / $n" | bc -l)
  else
    rate=$(grep -o 'rate [0-9]*' "$dir/fleet.out" | grep -o '[0-9]*$' || echo n/a)
    perconn=$(grep -o 'rss_per_conn_kb [0-9.]*' "$dir/fleet.out" | grep -o '[0-9.]*$' || echo n/a)
  fi
  perconn=$(printf '%.2f' "$perconn" 2>/dev/null) || perconn=n/a
  printf '%-22s %-8s %8s %10s %12s %14s %14s %10s\n' "$name" "$client" "$rate" "$crss" "$perconn" \
    "$(echo "scale=3; ($cu + $cs) * 100 / $tck / $idle * 1000 / $n" | bc -l)" \
    "$(echo "scale=3; $bu * 100 / $tck / $idle * 1000 / $n" | bc -l)/$(echo "scale=3; $bs * 100 / $tck / $idle * 1000 / $n" | bc -l)" "$brss"
  sleep 2
}

# profile BROKER_NAME BROKER_PID PORT: the idle fleet under kiln run.
profile() {
  name=$1 bpid=$2 port=$3
  echo "## $name" >> "$dir/frames"
  "$kiln" run --store "$dir/runs.db" --name "fleet-$name" -p "$bpid" -w 25 -d 15 \
    load mqtt conn -h 127.0.0.1 -p "$port" -c "$n" -i 0 -k 15 -V 4 > "$dir/run.out" 2>&1 || true
  grep -E "^  target |^  top functions|^ +[0-9.]+%  " "$dir/run.out" | head -9 >> "$dir/frames" \
    || { echo "  (no summary; kiln run's last lines:)"; tail -5 "$dir/run.out"; } >> "$dir/frames"
  sleep 2
}

echo "# $(date -u +%Y-%m-%d) $(nproc) cores; mosquitto $(dpkg-query -W -f '${Version}' mosquitto), RabbitMQ $(dpkg-query -W -f '${Version}' rabbitmq-server); $n connections, keepalive 15 s"
printf '%-22s %-8s %8s %10s %12s %14s %14s %10s\n' broker client "conn/s" "RSS KiB" "KiB/conn" "client %/1k" "broker u/s %/1k" "brk RSS KiB"
parts=${PARTS:-mosquitto rabbitmq pubsub}
rport=${RABBIT_PORT:-25697}
start_mosquitto 18883
# kiln's RSS with one connection, subtracted before dividing by the fleet.
"$kiln" load mqtt conn -h 127.0.0.1 -p 18883 -c 1 -k 15 -V 4 > /dev/null 2>&1 &
bp=$!; sleep 3; kiln_base=$(rss_kb "$bp"); kill -INT "$bp"; wait "$bp" || true
echo "# kiln RSS with one connection: $kiln_base KiB (subtracted)"
case $parts in *mosquitto*)
  for c in kiln python; do fleet mosquitto "$mpid" 18883 "$c"; done
  profile mosquitto "$mpid" 18883 ;;
esac
# RabbitMQ's AMQP port RABBIT_PORT (+1 distribution, +3 epmd), MQTT on +5.
case $parts in *rabbitmq*)
for sbwt in none very_long; do
  BROKER_MQTT_PORT=$((rport + 5)) BROKER_ERL_ARGS="+sbwt $sbwt +sbwtdcpu $sbwt +sbwtdio $sbwt +P 2000000 +Q 100000" \
    "$root/bench/amqp/broker.sh" start "$dir/rabbit" "$rport" > "$dir/beam.pid"
  beam=$(cat "$dir/beam.pid")
  for c in kiln python; do fleet "rabbitmq+sbwt-$sbwt" "$beam" $((rport + 5)) "$c"; done
  profile "rabbitmq+sbwt-$sbwt" "$beam" $((rport + 5))
  "$root/bench/amqp/broker.sh" stop "$dir/rabbit" > /dev/null 2>&1 || true
  sleep 3; rm -rf "$dir/rabbit"
done ;;
esac
echo "# where each broker's CPU went while the fleet idled (kiln run -p BROKER, 15 s):"
cat "$dir/frames" 2>/dev/null || true

case $parts in *pubsub*) ;; *) exit 0 ;; esac
echo "# pub/sub through mosquitto: $msgs messages of 100 bytes, 1 publisher, 1 subscriber"
printf '%-5s %-10s %12s %12s %12s %14s\n' qos client sent received "recv msg/s" "client µs/msg"
python3 -c "import sys; sys.stdout.write(('x' * 99 + '\n') * $msgs)" > "$dir/lines"
for q in 0 1; do
  for rep in 1 2; do
    # mosquitto_pub -l + mosquitto_sub: the subscriber stops at $msgs or 5 s after the last.
    /usr/bin/time -f '%U %S' -o "$dir/tsub" mosquitto_sub -h 127.0.0.1 -p 18883 -t "b/$q/$rep" -q "$q" -C "$msgs" -W 30 > "$dir/sub.out" 2>/dev/null &
    spid=$!
    sleep 0.5
    t0=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o "$dir/tpub" mosquitto_pub -h 127.0.0.1 -p 18883 -t "b/$q/$rep" -q "$q" -l < "$dir/lines"
    wait "$spid" || true
    t1=$(date +%s.%N)
    got=$(wc -l < "$dir/sub.out")
    cpu=$(cat "$dir/tpub" "$dir/tsub" | awk '{s += $1 + $2} END {print s}')
    printf '%-5s %-10s %12s %12s %12.0f %14.2f\n' "$q" mosquitto "$msgs" "$got" "$(echo "$got / ($t1 - $t0)" | bc -l)" "$(echo "$cpu * 1000000 / $msgs" | bc -l)"
    /usr/bin/time -f '%U %S' -o "$dir/tk" "$kiln" load mqtt pubsub -h 127.0.0.1 -p 18883 -c 1 --subscribers 1 -t "k/$q/$rep" \
      -q "$q" -F 100 -s 100 -I 0 -L "$msgs" -V 4 -o "$dir/ps" > "$dir/ps.out" 2>&1 || true
    eval "$(python3 -c "import json; h=json.load(open('$dir/ps.json'))['headline']; t={c['name']: c['value'] for c in h['totals']}; print(f\"sent={t['sent']} got={t['received']} dur={h['duration_s']}\")")"
    cpu=$(awk '{print $1 + $2}' "$dir/tk")
    printf '%-5s %-10s %12s %12s %12.0f %14.2f\n' "$q" kiln "$sent" "$got" "$(echo "$got / $dur" | bc -l)" "$(echo "$cpu * 1000000 / $msgs" | bc -l)"
  done
done
