#!/bin/sh
# kiln load amqp vs RabbitMQ PerfTest 2.22.1: same private broker, same scenarios, same run.
#
#   bench/amqp/run.sh [SECONDS]        (default 20 s per run)
#
# Scenarios (PerfTest command lines, passed unchanged to both tools):
#   stream:  the seed's stream run: 1 producer, confirm 2000, persistent, no consumer
#   classic: 1 producer -> 1 consumer, autoack, server-named classic queue
# For each tool it prints the sending/receiving rate (from the tool's own summary line
# "sending rate avg: N msg/s"), the client's CPU seconds (user+sys from /usr/bin/time) and
# CPU seconds per million messages sent, and the broker's CPU seconds during the run
# (utime+stime of beam.smp from /proc). Then kiln/PerfTest ratios.
#
# Needs: rabbitmq-server, java 17, maven (to fetch PerfTest and its dependencies once into
# $PERFTEST_LIB, default ~/.cache/kiln-bench/perftest-2.22.1), a release build of kiln
# ($KILN, default target/release/kiln).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-20}
kiln=${KILN:-$root/target/release/kiln}
lib=${PERFTEST_LIB:-$HOME/.cache/kiln-bench/perftest-2.22.1}
port=${BENCH_PORT:-5690}
[ -x "$kiln" ] || { echo "build kiln first: cargo build --release -p kiln (or set KILN)" >&2; exit 1; }

if [ ! -f "$lib/perf-test-2.22.1.jar" ]; then
  mkdir -p "$lib"
  cat > "$lib/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>kiln.bench</groupId><artifactId>perftest-deps</artifactId><version>1</version>
<dependencies><dependency><groupId>com.rabbitmq</groupId><artifactId>perf-test</artifactId>
<version>2.22.1</version></dependency></dependencies></project>
POM
  (cd "$lib" && mvn -q dependency:copy-dependencies -DoutputDirectory=.) >&2
fi

dir=$(mktemp -d /tmp/kiln-bench-amqp.XXXXXX)
cleanup() { "$here/broker.sh" stop "$dir/broker" || true; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
beam=$("$here/broker.sh" start "$dir/broker" "$port")
uri="amqp://guest:guest@127.0.0.1:$port"
tck=$(getconf CLK_TCK)
ctl() { HOME="$dir/broker/home" ERL_EPMD_PORT=$((port + 3)) /usr/lib/rabbitmq/bin/rabbitmqctl -n kilnbench@localhost "$@"; }
broker_ticks() { awk '{print $14 + $15}' "/proc/$beam/stat"; }

echo "# $(date -u +%Y-%m-%d) $(nproc) cores; broker RabbitMQ $(dpkg-query -W -f '${Version}' rabbitmq-server); ${secs} s per run"
printf '%-8s %-9s %12s %12s %10s %14s %10s %14s\n' scenario tool "sent msg/s" "recv msg/s" "client s" "client s/Mmsg" "broker s" "broker s/Mmsg"

measure() { # scenario tool queue -- args...
  scen=$1 tool=$2 q=$3; shift 3
  b0=$(broker_ticks)
  if [ "$tool" = kiln ]; then
    /usr/bin/time -f '%U %S' -o "$dir/time" "$kiln" load amqp -h "$uri" "$@" > "$dir/out" 2> "$dir/err" || { cat "$dir/err" >&2; exit 1; }
  else
    /usr/bin/time -f '%U %S' -o "$dir/time" java -cp "$lib/*" com.rabbitmq.perf.PerfTest -h "$uri" "$@" > "$dir/out" 2> "$dir/err" || { cat "$dir/err" >&2; exit 1; }
  fi
  b1=$(broker_ticks)
  sent=$(grep -o 'sending rate avg: [0-9]*' "$dir/out" | grep -o '[0-9]*$' || echo 0)
  recv=$(grep -o 'receiving rate avg: [0-9]*' "$dir/out" | grep -o '[0-9]*$' || echo 0)
  cpu=$(awk '{printf "%.2f", $1 + $2}' "$dir/time")
  per=$(awk -v c="$cpu" -v r="$sent" -v s="$secs" 'BEGIN { m = r * s / 1e6; if (m > 0) printf "%.2f", c / m; else print "n/a" }')
  bcpu=$(awk -v a="$b0" -v b="$b1" -v t="$tck" 'BEGIN { printf "%.2f", (b - a) / t }')
  bper=$(awk -v c="$bcpu" -v r="$sent" -v s="$secs" 'BEGIN { m = r * s / 1e6; if (m > 0) printf "%.2f", c / m; else print "n/a" }')
  printf '%-8s %-9s %12s %12s %10s %14s %10s %14s\n' "$scen" "$tool" "$sent" "$recv" "$cpu" "$per" "$bcpu" "$bper"
  echo "$scen $tool $sent $recv $cpu $per $bcpu $bper" >> "$dir/results"
  [ -z "$q" ] || ctl delete_queue "$q" > /dev/null 2>&1 || true
  sleep 2
}

for tool in perftest kiln; do
  measure stream "$tool" "bench-stream-$tool" --queue "bench-stream-$tool" --queue-args x-queue-type=stream \
    --auto-delete false --flag persistent --producers 1 --confirm 2000 --consumers 0 --time "$secs"
  measure classic "$tool" "" --producers 1 --consumers 1 --autoack --time "$secs"
done

echo "# kiln / PerfTest"
awk '{ k = $1; if ($2 == "kiln") { ks[k] = $3; kc[k] = $6; kb[k] = $8 } else { ps[k] = $3; pc[k] = $6; pb[k] = $8 } }
  END { for (k in ks) printf "%-8s sending rate x%.2f, client CPU per message x%.2f, broker CPU per message x%.2f\n", k, ks[k] / ps[k], kc[k] / pc[k], kb[k] / pb[k] }' "$dir/results"
