#!/usr/bin/env bash
# The run report on a seed-sized run: a private RabbitMQ (+JPperf map) under
# `kiln load amqp -x 1 -y 1 -r RATE`, recorded with -e cpu,offcpu at 999 Hz for SECONDS
# (default 600: ten minutes). Then, each REPEAT times (default 5) on this shared machine:
#   - the report written: by kiln run itself, and by `kiln runs report`, beside the anchor
#     `kiln flamegraph run:bench -o x.html` (the plain viewer of the CPU profile alone);
#   - its size beside the stored run's (kiln runs export: one self-contained file) and the
#     store's;
#   - opened in headless Chromium (a fresh browser each time): ms until the charts and
#     every flame graph are drawn, beside the plain viewer page of the same CPU profile;
#   - window selections (1 s, 10 s, 60 s, the measurement, none) re-drawing every flame
#     graph and function table;
#   - the chart density case: a synthetic hour (3,600 s, 29 series) drawn, and per cursor
#     move.
# Usage: bench/report/run.sh [SECONDS] [RATE]
#        STORE=FILE bench/report/run.sh     reuses a store holding a run named 'bench'
set -euo pipefail
secs=${1:-600}
rate=${2:-2000}
repeat=${REPEAT:-5}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kiln=${KILN:-$root/target/release/kiln}
[ -x "$kiln" ] || (cd "$root" && cargo build --release -q -p kiln)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (2 CPUs, shared)"

if [ -z "${STORE:-}" ]; then
  . "$root/bench/record/with_broker.sh"
  trap 'stop_broker; rm -rf "$out"' EXIT
  export KILN_STORE="$work/runs.db"
  echo "recording ${secs} s of beam.smp (pid $beam) at 999 Hz, -e cpu,offcpu, $rate msg/s"
  "$kiln" run --name bench -p "$beam" -e cpu,offcpu -d "$secs" --warmup 5 --report "$out/run-by-kiln-run.html" \
    load amqp -h "$uri" -x 1 -y 1 -r "$rate" --queue kiln-bench-report >"$out/run.txt" 2>"$out/run.err"
  grep -E "^run |load:|latency|target " "$out/run.txt" || true
  grep -E "stored .* after|kiln run: report" "$out/run.err" || cat "$out/run.err"
  if [ -n "${KEEP_STORE:-}" ]; then cp "$KILN_STORE" "$KEEP_STORE"; echo "store kept in $KEEP_STORE"; fi
else
  export KILN_STORE=$STORE
fi
"$kiln" runs show bench | grep -E "profile|series" || true

ms() { python3 -c 'import sys,time; t=time.perf_counter(); import subprocess; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); print(round((time.perf_counter()-t)*1000))' "$@"; }
stats() { python3 -c 'import sys,statistics as s; v=sorted(map(float,sys.argv[1:])); print(f"median {s.median(v):.0f} ms (min {v[0]:.0f}, max {v[-1]:.0f}; {len(v)} runs)")' "$@"; }
rep=(); fg=()
for _ in $(seq "$repeat"); do
  rep+=("$(ms "$kiln" runs report bench -o "$out/run.html")")
  fg+=("$(ms "$kiln" flamegraph --event-filter cpu-clock run:bench -o "$out/cpu.html")")
done
echo "report written (kiln runs report):               $(stats "${rep[@]}")"
echo "anchor: plain viewer of the CPU profile (flamegraph): $(stats "${fg[@]}")"
"$kiln" runs export bench -o "$out/bench.kiln" 2>/dev/null
size() { stat -c %s "$1"; }
mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1e6 }'; }
echo "sizes: report $(mb "$(size "$out/run.html")"), stored run (kiln runs export) $(mb "$(size "$out/bench.kiln")"), store file $(mb "$(size "$KILN_STORE")"), plain CPU viewer $(mb "$(size "$out/cpu.html")")"

cd "$here"
echo "opened in Chromium (ms to charts and every flame graph drawn; browser CPU ms):"
REPEAT=$repeat node measure.mjs open "$out/run.html" "$out/cpu.html"
echo "window selection: every flame graph and function table re-drawn (ms; sync work and to the next painted frame):"
REPEAT=$repeat node measure.mjs windows "$out/run.html"
(cd "$root" && cargo run -q --release -p kiln-report --example hour -- "$out/hour.html" 2>/dev/null)
echo "chart density: a synthetic hour of series (ms per full redraw of every chart, per cursor move):"
REPEAT=$repeat node measure.mjs charts "$out/hour.html"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
