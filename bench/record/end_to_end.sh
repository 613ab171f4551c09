#!/usr/bin/env bash
# From the end of a recording to a written flame graph: kiln record vs the classic
# pipeline (perf record -g; perf script | inferno-collapse-perf | inferno-flamegraph),
# on the same busy 2-thread workload, in the same run.
#
# Usage: bench/record/end_to_end.sh [SECONDS] [HZ]     (defaults: 30 s, 999 Hz)
# Needs: root (or perf_event_paranoid <= 1), linux-perf, cc, inferno on PATH
# (cargo install inferno), and a release kiln (built here if missing).
set -euo pipefail
secs=${1:-30}
hz=${2:-999}
root=$(cd "$(dirname "$0")/../.." && pwd)
kiln=${KILN:-$root/target/release/kiln}
if [ ! -x "$kiln" ]; then
    (cd "$root" && cargo build --release -p kiln)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -fno-omit-frame-pointer -o "$work/busy" "$root/bench/record/busy.c"

echo "== kiln record -F $hz -d $secs -o kiln.svg -- busy (2 threads)"
"$kiln" record -F "$hz" -o "$work/kiln.svg" -- "$work/busy" "$secs" 2 >/dev/null 2>"$work/kiln.err"
cat "$work/kiln.err"
kiln_s=$(sed -n 's/.*output written \([0-9.]*\) s after sampling stopped.*/\1/p' "$work/kiln.err")

echo "== perf record -g -F $hz -- busy; perf script | inferno-collapse-perf | inferno-flamegraph"
perf record -q -g -F "$hz" -o "$work/perf.data" -- "$work/busy" "$secs" 2 >/dev/null
t0=$(date +%s.%N)
perf script -i "$work/perf.data" 2>/dev/null | inferno-collapse-perf | inferno-flamegraph >"$work/perf.svg"
t1=$(date +%s.%N)
perf_s=$(echo "$t1 - $t0" | bc -l)
samples=$(perf report -i "$work/perf.data" --stdio 2>/dev/null | sed -n 's/^# Samples: \(.*\) of event.*/\1/p' | head -1)

kiln_samples=$(sed -n 's/.*: \([0-9]*\) samples of cpu-clock.*/\1/p' "$work/kiln.err")
printf 'kiln: %.3f s from end of sampling to SVG (%s samples)\n' "$kiln_s" "$kiln_samples"
printf 'perf script | inferno: %.3f s from perf.data to SVG (%s samples in perf.data)\n' "$perf_s" "$samples"
printf 'ratio (perf pipeline / kiln): %.1fx\n' "$(echo "$perf_s / $kiln_s" | bc -l)"
