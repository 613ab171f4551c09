#!/bin/sh
# Fleets past one machine's limits: connect rate and the pre-flight check.
#
#   bench/fleet/run.sh [CONNECTIONS] [REPEATS]   (default 10000 3)
#
# 1. Connect rate against a private mosquitto on loopback: `kiln load mqtt conn` beside the
#    minimal asyncio client of bench/mqtt/pyfleet.py (MQTT 3.1.1, at most 1,000 handshakes
#    at a time), alternated REPEATS times each in the same run, first on the machine as it
#    is ("quiet"), then with every core saturated by one busy loop per core (started and
#    stopped by PID). Both are timed alike from the broker's side: its established
#    connections (ss every 50 ms), from the first poll that sees one to the first that
#    sees all (n/a: not all up within 60 s); the asyncio client's own timing (its start
#    to its last CONNACK) is printed beside.
# 2. The pre-flight check's answer, before any connection, for fleets too big for this
#    machine (exit status and the lines kiln prints).
# PARTS="rate preflight" (default both) chooses.
# Needs: mosquitto, python3, iproute2 (ss), bc, a release kiln ($KILN).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-10000}
reps=${2:-3}
kiln=${KILN:-$root/target/release/kiln}
[ -x "$kiln" ] || { echo "build kiln first: cargo build --release -p kiln (or set KILN)" >&2; exit 1; }
dir=$(mktemp -d /tmp/kiln-bench-fleet.XXXXXX)
mpid=
burners=
stop_burners() {
  for b in $burners; do kill "$b" 2>/dev/null || true; done
  for b in $burners; do wait "$b" 2>/dev/null || true; done
  burners=
}
cleanup() {
  stop_burners
  [ -z "$mpid" ] || kill "$mpid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_connections -1\npersistence false\n' "$port" > "$dir/mosquitto.conf"
/usr/sbin/mosquitto -c "$dir/mosquitto.conf" > "$dir/mosquitto.log" 2>&1 &
mpid=$!
i=0; until (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.1; done
# The broker holds one descriptor per connection too.
[ "$(awk '/Max open files/ {print $4}' "/proc/$mpid/limits")" -gt "$n" ] || echo "# warning: mosquitto's open-files limit is below $n" >&2

# rate CLIENT: one fleet of $n connections; prints the connect rate (or "n/a"), as the
# broker's side shows it: established connections on its port (ss, every 50 ms), from
# the first poll that sees one to the first that sees all, so both clients are timed
# alike. The asyncio client's own figure is kept in $dir/own.
rate() {
  if [ "$1" = kiln ]; then
    "$kiln" load mqtt conn -h 127.0.0.1 -p "$port" -c "$n" -i 0 -k 60 -V 4 > "$dir/k.out" 2>&1 &
  else
    python3 "$root/bench/mqtt/pyfleet.py" 127.0.0.1 "$port" "$n" 60 60 > "$dir/p.out" 2>&1 &
  fi
  cpid=$!
  t1= c1= c=0 i=0
  while [ $i -lt 1200 ]; do
    c=$(ss -Htn state established "( sport = :$port )" | wc -l)
    t=$(date +%s.%N)
    if [ -z "$t1" ] && [ "$c" -gt 0 ]; then t1=$t c1=$c; fi
    [ "$c" -lt "$n" ] || break
    i=$((i + 1)); sleep 0.05
  done
  if [ "$c" -ge "$n" ] && [ "$c1" -lt "$n" ]; then
    echo "($n - $c1) / ($t - $t1)" | bc -l | xargs printf '%.0f\n'
  else
    echo "n/a"
  fi
  if [ "$1" = kiln ]; then
    kill -INT "$cpid"
  else
    # Its own figure, printed 3 s after its last CONNACK.
    i=0; until grep -q '^connections' "$dir/p.out" || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.1; done
    grep -o 'rate [0-9]*' "$dir/p.out" | grep -o '[0-9]*$' >> "$dir/own" || echo n/a >> "$dir/own"
    kill -TERM "$cpid" 2>/dev/null || true
  fi
  wait "$cpid" 2>/dev/null || true
  sleep 2
}

echo "# $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); mosquitto $(dpkg-query -W -f '${Version}' mosquitto), Python $(python3 -c 'import sys; print(sys.version.split()[0])'); $n connections, $reps runs each"
parts=${PARTS:-rate preflight}
case $parts in *rate*)
printf '%-10s %-8s %s\n' machine client "conn/s (each run)"
for cond in quiet saturated; do
  if [ "$cond" = saturated ]; then
    for c in $(seq "$(nproc)"); do sh -c 'while :; do :; done' & burners="$burners $!"; done
    sleep 1
  fi
  k=; p=; : > "$dir/own"
  for r in $(seq "$reps"); do
    k="$k $(rate kiln)"
    p="$p $(rate python)"
  done
  printf '%-10s %-8s %s\n' "$cond" kiln "$k" "$cond" asyncio "$p"
  echo "#          asyncio by its own timing (start to last CONNACK): $(tr '\n' ' ' < "$dir/own")"
  stop_burners
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
;; esac
case $parts in *preflight*) ;; *) exit 0 ;; esac

echo "# the pre-flight check, before any connection (open-files hard limit $(ulimit -Hn), $(cat /proc/sys/net/ipv4/ip_local_port_range | tr '\t' '-') ephemeral ports):"
for args in "-c 100000 --source-address 127.0.0.2" "-c 100000" "-c 60000 --source-address 127.0.0.2,127.0.0.3"; do
  echo "\$ kiln load mqtt conn -h 127.0.0.1 -p PORT $args"
  # shellcheck disable=SC2086
  "$kiln" load mqtt conn -h 127.0.0.1 -p "$port" $args -i 0 -z 1 > "$dir/pf.out" 2>&1 && s=0 || s=$?
  sed "s/:$port/:PORT/g" "$dir/pf.out" | grep -v '^id: ' | head -12
  echo "(exit $s)"
done
