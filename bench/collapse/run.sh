#!/usr/bin/env bash
# Collapse benchmark: kiln collapse vs inferno-collapse-perf on the same large `perf script`
# input, one and two threads, in the same run. The four commands run in turn, round after
# round (so a burst of load on this shared machine hits all of them alike); prints each
# command's median wall time and spread, peak memory, and the ratios of the medians and of
# each round. As root (it records with perf).
#
#   bench/collapse/run.sh [INPUT]     (default: bench/work/perf-big.txt, recorded once)
#   ROUNDS=9 bench/collapse/run.sh    (default 7 rounds)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$root/bench/work
mkdir -p "$work"
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
(cd "$root" && cargo build --release -q -p kiln)
kiln=$CARGO_TARGET_DIR/release/kiln
inferno=$(command -v inferno-collapse-perf)
rounds=${ROUNDS:-7}

input=${1:-$work/perf-big.txt}
if [ ! -s "$input" ]; then
  cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -pthread \
    "$root/examples/workload/workload.c" -o "$work/workload"
  # One system-wide recording at 999 Hz on both CPUs while the workload runs (and
  # whatever else runs on the machine: builds, with deep Rust and C++ stacks), long
  # enough that its text passes 90 MB: distinct samples, not one recording repeated.
  secs=70
  while :; do
    perf record -q -a -g -F 999 -o "$work/perf.data" -- "$work/workload" "$secs" 3 >/dev/null 2>&1
    perf script -i "$work/perf.data" > "$input" 2>/dev/null
    [ "$(stat -c %s "$input")" -ge 90000000 ] && break
    secs=$((secs * 2))
  done
fi
size=$(stat -L -c %s "$input")
echo "input: $input ($((size / 1000000)) MB, $(grep -c '^[^[:space:]#]' "$input") samples)"
echo "date: $(date -u +%F), cpus: $(nproc), load before: $(cut -d' ' -f1-3 /proc/loadavg)"

names=(inferno-1 inferno-2 kiln-1 kiln-2)
cmds=(
  "$inferno -n 1 -q $input"
  "$inferno -n 2 -q $input"
  "$kiln collapse --threads 1 -q $input"
  "$kiln collapse --threads 2 -q $input"
)
# Warm the page cache and check the outputs once.
"$kiln" collapse -q "$input" > "$work/kiln.folded"
"$inferno" -q "$input" > "$work/inferno.folded"
difflines=$(diff <(sort "$work/kiln.folded") <(sort "$work/inferno.folded") | grep -c '^[<>]' || true)

: > "$work/collapse-rounds.txt"
for r in $(seq "$rounds"); do
  for i in "${!names[@]}"; do
    # shellcheck disable=SC2086
    /usr/bin/time -f "%e %M %U %S" -o "$work/time.txt" ${cmds[$i]} > /dev/null
    echo "$r ${names[$i]} $(cat "$work/time.txt")" >> "$work/collapse-rounds.txt"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work/collapse-rounds.txt" "$size" "$difflines" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
size = int(sys.argv[2]) / 1e6
by = {}
for r, name, wall, rss, user, sys_ in rows:
    by.setdefault(name, []).append((int(r), float(wall), int(rss), float(user) + float(sys_)))
def med(name, k): return st.median(x[k] for x in by[name])
print(f"{'tool':<8} {'threads':>7} {'median s':>9} {'min-max s':>12} {'MB/s':>6} {'CPU s':>6} {'peak RSS MB':>11}")
for name in ["inferno-1", "inferno-2", "kiln-1", "kiln-2"]:
    w = [x[1] for x in by[name]]
    print(f"{name.split('-')[0]:<8} {name.split('-')[1]:>7} {med(name,1):>9.3f} {min(w):>5.2f}-{max(w):<6.2f} {size/med(name,1):>6.0f} {med(name,3):>6.2f} {max(x[2] for x in by[name])/1024:>11.1f}")
def per_round(a, b):
    ra = {x[0]: x[1] for x in by[a]}
    return sorted(ra[x[0]] / x[1] for x in by[b])
for n in ["1", "2"]:
    pr = per_round("inferno-" + n, "kiln-" + n)
    print(f"kiln/inferno throughput, {n} thread(s): {med('inferno-'+n,1)/med('kiln-'+n,1):.2f}x "
          f"(rounds: {', '.join(f'{x:.2f}' for x in pr)})")
pr = per_round("inferno-1", "kiln-2")
print(f"kiln 2 threads / inferno 1 thread: {med('inferno-1',1)/med('kiln-2',1):.2f}x (rounds: {', '.join(f'{x:.2f}' for x in pr)})")
for n in ["1", "2"]:
    print(f"peak memory kiln/inferno ({n} thread(s)): "
          f"{max(x[2] for x in by['kiln-'+n])/max(x[2] for x in by['inferno-'+n]):.2f}")
print(f"folded lines that differ (documented differences): {sys.argv[3]}")
PY
