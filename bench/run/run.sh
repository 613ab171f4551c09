#!/usr/bin/env bash
# kiln run's own costs, on a private RabbitMQ (+JPperf map) under `kiln load amqp -x 1 -y 1
# -r RATE`, recorded with -e cpu,offcpu at 999 Hz for SECONDS:
#   - kiln's own CPU during the run (load + recorder + /proc sampling) beside the broker's;
#   - the time from the end of the measurement to the stored run (kiln run prints it);
#   - the stored run's size (kiln runs export: one self-contained file) against the
#     perf.data of `perf record -g -F 999` on the same broker over the same seconds (run at
#     the same time), and against --call-graph dwarf's;
#   - `kiln runs` with 1,000 runs stored, and `kiln compare` of two runs (hyperfine).
# Usage: bench/run/run.sh [SECONDS] [RATE]     (default 60 s, 5000 msg/s)
set -euo pipefail
secs=${1:-60}
rate=${2:-5000}
. "$(dirname "$0")/../record/with_broker.sh"
export KILN_STORE="$work/runs.db"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); beam.smp pid $beam; ${secs}s at 999 Hz, -e cpu,offcpu, $rate msg/s"

# perf -g over the same window (started as the measurement starts: after the warm-up).
(sleep 3; perf record -q -g -F 999 -e cpu-clock -p "$beam" -o "$work/perf-fp.data" -- sleep "$secs" 2>/dev/null) &
bg+=($!)
"$kiln" run --name a -p "$beam" -e cpu,offcpu -d "$secs" --warmup 3 \
  load amqp -h "$uri" -x 1 -y 1 -r "$rate" --queue kiln-bench-run >"$work/a.txt" 2>"$work/a.err"
wait "${bg[-1]}" 2>/dev/null || true
grep -E "^run |load:|latency|target |kiln CPU" "$work/a.txt"
grep "stored .* after the measurement ended" "$work/a.err"
# --call-graph dwarf's perf.data for 10 s of the same load (the second run), scaled.
(sleep 5; perf record -q --call-graph dwarf -F 999 -e cpu-clock -p "$beam" -o "$work/perf-dwarf.data" -- sleep 10 2>/dev/null) &
bg+=($!)
"$kiln" run --name b -p "$beam" -e cpu,offcpu -d "$secs" --warmup 3 \
  load amqp -h "$uri" -x 1 -y 1 -r "$rate" --queue kiln-bench-run >/dev/null 2>"$work/b.err"
wait "${bg[-1]}" 2>/dev/null || true
grep "stored .* after the measurement ended" "$work/b.err"
"$kiln" runs export a -o "$work/a.kiln" 2>/dev/null
size() { stat -c %s "$1"; }
mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
fp=$(size "$work/perf-fp.data"); run=$(size "$work/a.kiln"); dw=$(size "$work/perf-dwarf.data")
dw60=$((dw * secs / 10))
echo "stored run (cpu + offcpu, series, histograms): $(mb "$run")"
echo "perf.data -g, same ${secs}s (cpu only):         $(mb "$fp")  -> $(ratio "$fp" "$run")x the stored run"
echo "perf.data --call-graph dwarf, 10 s x $((secs / 10)):        $(mb "$dw60")  -> $(ratio "$dw60" "$run")x"

# 1,000 runs in a store for the listing.
many="$work/many.db"
files=()
for _ in $(seq 1000); do files+=("$work/a.kiln"); done
KILN_STORE="$many" "$kiln" runs import "${files[@]}" 2>/dev/null
echo "store with 1,000 runs: $(mb "$(size "$many")")"
hyperfine -N -w 2 -r 10 --export-json "$work/h.json" \
  "env KILN_STORE=$many $kiln runs" \
  "env KILN_STORE=$KILN_STORE $kiln compare a b" 2>/dev/null | grep -E "Time|±|Benchmark" || true
python3 - "$work/h.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['command'].split()[-3:]}: median {r['median']*1000:.1f} ms (min {r['min']*1000:.1f}, max {r['max']*1000:.1f})")
PY
