#!/usr/bin/env bash
# What off-CPU recording does to the latency of the broker it watches: Debian RabbitMQ
# (+JPperf true) under a steady publish and consume load (kiln load amqp -r RATE, consumer
# latency in HdrHistogram), each round running the same load
#   * with nothing recording,
#   * under `kiln record -e offcpu -p BEAM` (eBPF on sched_switch, aggregated in the kernel),
#   * under `perf record -e sched:sched_switch -g -p BEAM` (a sample per switch),
# interleaved, ROUNDS times. Prints the median p95 and p99 consumer latency of each
# configuration and its ratio to the unrecorded runs.
# Usage: bench/record/offcpu_latency.sh [SECONDS] [ROUNDS] [RATE]   (defaults 20, 3, 5000)
set -euo pipefail
secs=${1:-20}
rounds=${2:-3}
rate=${3:-5000}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kiln=${KILN:-$root/target/release/kiln}
[ -x "$kiln" ] || (cd "$root" && cargo build --release -q -p kiln)
work=$(mktemp -d)
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
rec=
cleanup() {
  [ -n "$rec" ] && kill "$rec" 2>/dev/null || true
  "$root/bench/amqp/broker.sh" stop "$work/broker" || true
  [ -n "${KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
beam=$(BROKER_ERL_ARGS="+JPperf true" "$root/bench/amqp/broker.sh" start "$work/broker" "$port")
uri="amqp://guest:guest@127.0.0.1:$port"
# Warm the broker up (queues, code loading) before measuring.
"$kiln" load amqp --uri "$uri" -x 1 -y 1 -r "$rate" -z 5 >/dev/null 2>&1

# Runs the load; with a recorder started 2 s in for SECONDS-4 s. Appends "p95 p99" (µs).
run() {
  local what=$1 out="$work/$1.$2"
  "$kiln" load amqp --uri "$uri" -x 1 -y 1 -r "$rate" -z "$secs" >"$out.load" 2>&1 &
  local load=$!
  sleep 2
  case $what in
    kiln) "$kiln" record -e offcpu -p "$beam" -d $((secs - 4)) -o "$out.folded" 2>"$out.err" & rec=$! ;;
    perf) perf record -q -e sched:sched_switch -g -p "$beam" -o "$out.data" -- sleep $((secs - 4)) 2>/dev/null & rec=$! ;;
    none) rec= ;;
  esac
  wait "$load"
  [ -n "$rec" ] && wait "$rec" || true
  rec=
  sed -n 's|.*min/median/75th/95th/99th/99.9th/max consumer latency: \([0-9]*\)/\([0-9]*\)/\([0-9]*\)/\([0-9]*\)/\([0-9]*\)/.*|\4 \5|p' \
    "$out.load" | tail -1 >>"$work/$what"
}
: >"$work/none"; : >"$work/kiln"; : >"$work/perf"
for r in $(seq "$rounds"); do
  run none "$r"; run kiln "$r"; run perf "$r"
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
b95=$(cut -d' ' -f1 "$work/none" | median); b99=$(cut -d' ' -f2 "$work/none" | median)
echo "load average $(cut -d' ' -f1-3 /proc/loadavg); $rate msg/s, $secs s per run, median of $rounds rounds"
printf '%-34s %9s %9s %9s %9s\n' recorder "p95 µs" "p99 µs" "p95 x" "p99 x"
for w in none kiln perf; do
  p95=$(cut -d' ' -f1 "$work/$w" | median); p99=$(cut -d' ' -f2 "$work/$w" | median)
  name=$w
  [ "$w" = kiln ] && name="kiln record -e offcpu"
  [ "$w" = perf ] && name="perf record -e sched:sched_switch -g"
  printf '%-34s %9s %9s %9.2f %9.2f\n' "$name" "$p95" "$p99" "$(echo "$p95 / $b95" | bc -l)" "$(echo "$p99 / $b99" | bc -l)"
done
echo "per round (p95 p99): none $(tr '\n' ' ' <"$work/none")| kiln $(tr '\n' ' ' <"$work/kiln")| perf $(tr '\n' ' ' <"$work/perf")"
