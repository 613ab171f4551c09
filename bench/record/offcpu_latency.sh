#!/usr/bin/env bash
# What off-CPU recording does to the latency of the broker it watches: Debian RabbitMQ
# (+JPperf map) under a steady publish and consume load (kiln load amqp -r RATE, consumer
# latency in HdrHistogram), each round running the same load
#   * with nothing recording,
#   * under `kiln record -e offcpu -p BEAM` (eBPF on sched_switch, one record per block),
#   * the same with --min-block 100 (blocks under 100 us add no time and cost no
#     kernel stack walk),
#   * the same with --wakers (a second program on sched_wakeup takes the waker's stacks),
#   * under `perf record -e sched:sched_switch -g -p BEAM` (a sample per switch),
# interleaved, ROUNDS times. For each configuration it prints the median over rounds of
# each run's p50/p95/p99 consumer latency, and the median over every second of every
# round of that second's p99 (a whole run's p99 swings with a single hiccup of a shared
# machine; the per-second figure is the stable one), with ratios to the unrecorded runs.
# Usage: bench/record/offcpu_latency.sh [SECONDS] [ROUNDS] [RATE]   (defaults 10, 9, 5000)
set -euo pipefail
secs=${1:-10}
rounds=${2:-9}
rate=${3:-5000}
. "$(dirname "$0")/with_broker.sh"
# Warm the broker up (queues, code loading) before measuring.
"$kiln" load amqp --uri "$uri" -x 1 -y 1 -r "$rate" -z 5 >/dev/null 2>&1

# Runs the load; the recorder (if any) starts 2 s before it and ends 2 s after it, so it
# covers the whole load. Appends "p50 p95 p99" (µs).
run() {
  local what=$1 out="$work/$1.$2"
  case $what in
    kiln) "$kiln" record -e offcpu -p "$beam" -d $((secs + 4)) -o "$out.folded" 2>"$out.err" & ;;
    kiln100) "$kiln" record -e offcpu --min-block 100 -p "$beam" -d $((secs + 4)) -o "$out.folded" 2>"$out.err" & ;;
    kilnw) "$kiln" record -e offcpu --wakers -p "$beam" -d $((secs + 4)) -o "$out.folded" 2>"$out.err" & ;;
    perf) perf record -q -e sched:sched_switch -g -p "$beam" -o "$out.data" -- sleep $((secs + 4)) 2>/dev/null & ;;
  esac
  sleep 2
  "$kiln" load amqp --uri "$uri" -x 1 -y 1 -r "$rate" -z "$secs" -o "$out" >"$out.load" 2>&1
  wait
  sed -n 's|.*min/median/75th/95th/99th/99.9th/max consumer latency: \([0-9]*\)/\([0-9]*\)/\([0-9]*\)/\([0-9]*\)/\([0-9]*\)/.*|\2 \4 \5|p' \
    "$out.load" | tail -1 >>"$work/$what"
}
: >"$work/none"; : >"$work/kiln"; : >"$work/kiln100"; : >"$work/kilnw"; : >"$work/perf"
for r in $(seq "$rounds"); do
  run none "$r"; run kiln "$r"; run kiln100 "$r"; run kilnw "$r"; run perf "$r"
done
# kiln's own CPU and what it recorded, from the last round's summaries.
for w in kiln kiln100 kilnw; do
  echo "$w: $(grep -E 'off-CPU: [0-9]+ blocks' "$work/$w.$rounds.err" | head -1)"
  unseen=$(sed -n 's/.*warning: \([0-9]*\) off-CPU blocks are not in the profile: their end was not.*/\1/p' "$work/$w.$rounds.err")
  echo "$w: ${unseen:-0} blocks whose end was not seen"
done
python3 - "$work" "$rate" "$secs" "$rounds" <<'PY'
import json, statistics, sys, glob, os
work, rate, secs, rounds = sys.argv[1:5]
names = {"none": "none", "kiln": "kiln record -e offcpu",
         "kiln100": "kiln record -e offcpu --min-block 100",
         "kilnw": "kiln record -e offcpu --wakers",
         "perf": "perf record -e sched:sched_switch -g"}
rows = {}
for w in names:
    runs, seconds = [], []
    for f in sorted(glob.glob(os.path.join(work, f"{w}.*.json"))):
        r = json.load(open(f))
        lat = r["summary"].get("consumer_latency") or {}
        runs.append((lat.get("p50_us", 0), lat.get("p95_us", 0), lat.get("p99_us", 0)))
        seconds += [t["consumer_latency"]["p99_us"] for t in r["series"]
                    if t.get("consumer_latency") and t["consumer_latency"]["count"] > 100]
    med = lambda xs: statistics.median(xs) if xs else 0
    rows[w] = [med([x[i] for x in runs]) for i in range(3)] + [med(seconds), len(seconds)]
print(f"load average {open('/proc/loadavg').read().split()[0]}; {rate} msg/s, {secs} s per run, {rounds} rounds")
print(f"{'recorder':40} {'p50':>6} {'p95':>6} {'p99':>6} {'p99/s':>6} {'p50 x':>6} {'p95 x':>6} {'p99 x':>6} {'p99/s x':>7}")
b = rows["none"]
for w, name in names.items():
    r = rows[w]
    ratios = [r[i] / b[i] if b[i] else 0 for i in range(4)]
    print(f"{name:40} {r[0]:6.0f} {r[1]:6.0f} {r[2]:6.0f} {r[3]:6.0f} " + " ".join(f"{x:6.2f}" for x in ratios[:3]) + f" {ratios[3]:7.2f}")
print("(µs; p50/p95/p99: medians over rounds of each run's figure; p99/s: median over all seconds of that second's p99)")
PY
