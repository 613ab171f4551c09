#!/usr/bin/env bash
# From the end of sampling to a flame graph, and the wait before the first sample:
# kiln record -o x.svg vs perf record -g + (perf script | inferno-collapse-perf |
# inferno-flamegraph), on a small shell workload that keeps both cores busy (python3
# and gzip, SECONDS each, ending by themselves), ROUNDS times each, alternating.
#
# kiln's times are the ones it reports ("sampling started N s after launch; output
# written M s after sampling stopped"); perf's tail is the wall time of its pipeline
# on the perf.data of the same workload.
# Usage: bench/record/tail.sh [SECONDS] [ROUNDS] [HZ]     (defaults: 20 s, 3, 999 Hz)
# Needs: root (or perf_event_paranoid <= 1), linux-perf, python3, gzip, inferno on
# PATH (cargo install inferno), and a release kiln (built here if missing).
set -euo pipefail
secs=${1:-20}
rounds=${2:-3}
hz=${3:-999}
root=$(cd "$(dirname "$0")/../.." && pwd)
kiln=${KILN:-$root/target/release/kiln}
if [ ! -x "$kiln" ]; then
    (cd "$root" && cargo build --release -p kiln)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/load.sh" <<SH
python3 -c 'import time
t = time.time() + $secs
n = 0
while time.time() < t:
    n += sum(range(1000))' &
timeout $secs sh -c 'while :; do cat /usr/bin/python3*; done' | gzip -1 >/dev/null &
wait
SH
: >"$work/kiln.times"; : >"$work/perf.times"
for r in $(seq "$rounds"); do
    "$kiln" record -F "$hz" -o "$work/kiln.svg" -- sh "$work/load.sh" 2>"$work/kiln.err" >/dev/null
    start=$(sed -n 's/.*sampling started \([0-9.]*\) s after launch.*/\1/p' "$work/kiln.err")
    tail=$(sed -n 's/.*output written \([0-9.]*\) s after sampling stopped.*/\1/p' "$work/kiln.err")
    samples=$(sed -n 's/.*: \([0-9]*\) samples of cpu-clock.*/\1/p' "$work/kiln.err")
    parts=$(sed -n 's/.*after sampling stopped (\(.*\))/\1/p' "$work/kiln.err")
    echo "$start $tail $samples" >>"$work/kiln.times"
    perf record -q -g -F "$hz" -o "$work/perf.data" -- sh "$work/load.sh" >/dev/null 2>&1
    t0=$(date +%s.%N)
    perf script -i "$work/perf.data" 2>/dev/null | inferno-collapse-perf | inferno-flamegraph >"$work/perf.svg"
    t1=$(date +%s.%N)
    psamples=$(perf report -i "$work/perf.data" --stdio 2>/dev/null | sed -n 's/^# Samples: \(.*\) of event.*/\1/p' | head -1)
    echo "$(echo "$t1 - $t0" | bc -l) $psamples" >>"$work/perf.times"
    printf 'round %d: kiln started after %s s, SVG %s s after sampling (%s; %s samples); perf script | inferno %.3f s (%s samples)\n' \
        "$r" "$start" "$tail" "$parts" "$samples" "$(tail -1 "$work/perf.times" | cut -d' ' -f1)" "$psamples"
done
python3 - "$work" <<'PY'
import statistics, sys
w = sys.argv[1]
k = [list(map(float, l.split()[:2])) for l in open(f"{w}/kiln.times") if l.strip()]
p = [float(l.split()[0]) for l in open(f"{w}/perf.times") if l.strip()]
starts, tails = [x[0] for x in k], [x[1] for x in k]
ratios = [pp / kk for pp, kk in zip(p, tails) if kk > 0]
print(f"load average {open('/proc/loadavg').read().split()[0]}")
print(f"kiln: time to first sample median {statistics.median(starts):.3f} s (range {min(starts):.3f}-{max(starts):.3f})")
print(f"kiln: end of sampling -> SVG median {statistics.median(tails):.3f} s (range {min(tails):.3f}-{max(tails):.3f})")
print(f"perf script | inferno: median {statistics.median(p):.3f} s (range {min(p):.3f}-{max(p):.3f})")
print(f"ratio per round (perf pipeline / kiln tail): " + ", ".join(f"{r:.1f}x" for r in ratios))
PY
