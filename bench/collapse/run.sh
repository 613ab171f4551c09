#!/usr/bin/env bash
# Collapse benchmark: kiln collapse vs inferno-collapse-perf on the same >=100 MB
# `perf script` input, one and two threads, in the same run; prints times, throughput,
# peak memory and ratios. As root (it records with perf).
#
#   bench/collapse/run.sh [WORKDIR]      (default bench/work; kept for re-runs)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$root/bench/work}
mkdir -p "$work"
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
(cd "$root" && cargo build --release -q -p kiln)
kiln=$CARGO_TARGET_DIR/release/kiln
inferno=$(command -v inferno-collapse-perf)

input=$work/perf-100mb.txt
if [ ! -s "$input" ]; then
  cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -pthread \
    "$root/examples/workload/workload.c" -o "$work/workload"
  # 25 s system-wide at 999 Hz on both CPUs while the workload runs: the shape of the
  # recording in the seeds (25 s, 2 CPUs), with kernel, libc and other processes' stacks.
  perf record -q -a -g -F 999 -o "$work/perf.data" -- "$work/workload" 25 3 >/dev/null 2>&1
  perf script -i "$work/perf.data" > "$work/perf-one.txt" 2>/dev/null
  # Repeat the recording until the input passes 100 MB (same samples, several times).
  : > "$input"
  while [ "$(stat -c %s "$input")" -lt 100000000 ]; do cat "$work/perf-one.txt" >> "$input"; done
fi
size=$(stat -c %s "$input")
echo "input: $input ($((size / 1000000)) MB, $(grep -c 'cpu-clock' "$input") samples)"

measure() { # NAME CMD... -> prints "NAME median_s maxrss_kb"
  local name=$1; shift
  hyperfine -N --warmup 1 --runs 5 --export-json "$work/$name.json" -- "$*" >/dev/null 2>&1
  local med; med=$(python3 -c "import json,sys; r=json.load(open('$work/$name.json'))['results'][0]; print(r['median'])")
  local rss
  /usr/bin/time -f %M "$@" > /dev/null 2> "$work/$name.time" || true
  rss=$(tail -1 "$work/$name.time")
  echo "$name $med $rss"
}

{
  measure inferno-1 "$inferno" -n 1 -q "$input"
  measure inferno-2 "$inferno" -n 2 -q "$input"
  measure kiln-1 "$kiln" collapse --threads 1 -q "$input"
  measure kiln-2 "$kiln" collapse --threads 2 -q "$input"
} > "$work/collapse-results.txt"

# Same output check (kiln and inferno agree on this input apart from the documented
# differences; print the count of differing lines for the record).
"$kiln" collapse -q "$input" > "$work/kiln.folded"
"$inferno" -q "$input" > "$work/inferno.folded"
difflines=$(diff "$work/kiln.folded" "$work/inferno.folded" | grep -c '^[<>]' || true)

python3 - "$work/collapse-results.txt" "$size" "$difflines" <<'PY'
import sys
rows = {l.split()[0]: (float(l.split()[1]), int(l.split()[2])) for l in open(sys.argv[1])}
size = int(sys.argv[2]) / 1e6
print(f"{'tool':<10} {'threads':>7} {'median s':>9} {'MB/s':>7} {'peak RSS MB':>11}")
for name in ["inferno-1", "inferno-2", "kiln-1", "kiln-2"]:
    t, rss = rows[name]
    print(f"{name.split('-')[0]:<10} {name.split('-')[1]:>7} {t:>9.3f} {size/t:>7.0f} {rss/1024:>11.1f}")
for n in ["1", "2"]:
    print(f"ratio kiln/inferno throughput, {n} thread(s): {rows['inferno-'+n][0]/rows['kiln-'+n][0]:.2f}x")
print(f"ratio kiln 2 threads / inferno 1 thread: {rows['inferno-1'][0]/rows['kiln-2'][0]:.2f}x")
print(f"peak memory kiln/inferno (2 threads): {rows['kiln-2'][1]/rows['inferno-2'][1]:.2f}")
print(f"folded lines that differ (documented differences): {sys.argv[3]}")
PY
