#!/usr/bin/env bash
# Throughput a CPU-bound benchmark keeps while being sampled at 999 Hz: alone, under
# `kiln record` (stacks unwound in the kernel at sample time), under
# `kiln record --unwind copy` (16 KiB stack copies unwound afterwards) and under
# `perf record -g`, in the same run. Each configuration runs ROUNDS times, interleaved;
# the median is reported.
#
# Usage: bench/record/overhead.sh [SECONDS] [ROUNDS] [THREADS]   (defaults: 10 s, 3, 1)
set -euo pipefail
secs=${1:-10}
rounds=${2:-3}
threads=${3:-1}
root=$(cd "$(dirname "$0")/../.." && pwd)
kiln=${KILN:-$root/target/release/kiln}
if [ ! -x "$kiln" ]; then
    (cd "$root" && cargo build --release -p kiln)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -fno-omit-frame-pointer -o "$work/busy" "$root/bench/record/busy.c"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$work/base"; : >"$work/kiln"; : >"$work/copy"; : >"$work/perf"
for r in $(seq "$rounds"); do
    "$work/busy" "$secs" "$threads" >>"$work/base"
    "$kiln" record --unwind kernel -F 999 -o "$work/k.folded" -- "$work/busy" "$secs" "$threads" 2>/dev/null >>"$work/kiln"
    "$kiln" record --unwind copy -F 999 -o "$work/c.folded" -- "$work/busy" "$secs" "$threads" 2>/dev/null >>"$work/copy"
    perf record -q -g -F 999 -o "$work/p.data" -- "$work/busy" "$secs" "$threads" 2>/dev/null >>"$work/perf"
done
base=$(median <"$work/base"); k=$(median <"$work/kiln"); c=$(median <"$work/copy"); p=$(median <"$work/perf")
lost() { echo "(1 - $1 / $base) * 100" | bc -l; }
echo "throughput (work units/s, median of $rounds, $threads thread(s), $secs s; load average $(cut -d' ' -f1-3 /proc/loadavg)):"
echo "  alone:                      $base"
printf '  kiln record (in kernel):    %s  (%.2f%% lost)\n' "$k" "$(lost "$k")"
printf '  kiln record --unwind copy:  %s  (%.2f%% lost)\n' "$c" "$(lost "$c")"
printf '  perf record -g:             %s  (%.2f%% lost)\n' "$p" "$(lost "$p")"
