#!/usr/bin/env bash
# How often kiln compare's gate fires on an A/A experiment when the machine drifts: on a
# private RabbitMQ (+JPperf map) under `kiln load amqp -x 1 -y 1 -r RATE`, N experiments of
# two identical variants (`kiln run --variant a=true --variant b=true`, ROUNDS ABBA rounds
# of SECONDS each), and in each a CPU hog of this script's own (one busy process per CPU,
# stopped by its PID) started by --after-each after the run that ends the first half, so the
# second half runs on a slower machine. Each experiment is judged by
# `kiln compare a b --fail-if 'cpu_per_op>+10%,cpu_per_op<-10%'` (paired by round); a
# false alarm is exit status 3 (4 is "cannot tell", counted apart). With CONTROL=K, the first K experiments are also
# run one group after the other across the same drift (the hog started between the groups):
# the unpaired design the interleaving replaces.
# Usage: bench/run/aa_drift.sh [N] [ROUNDS] [SECONDS] [RATE]   (default 20, 6, 2, 3000)
set -euo pipefail
n=${1:-20}
rounds=${2:-6}
secs=${3:-2}
rate=${4:-3000}
control=${CONTROL:-0}
. "$(dirname "$0")/../record/with_broker.sh"
cpus=$(nproc)
load=(load amqp -h "$uri" -x 1 -y 1 -r "$rate" --queue kiln-aa --auto-delete false)
gates=(--fail-if 'cpu_per_op>+10%,cpu_per_op<-10%')
hogs() { # start: one busy process per CPU, their PIDs in $work/hogs
  for _ in $(seq "$cpus"); do sh -c 'while :; do :; done' & echo $! >>"$work/hogs"; done
}
unhog() { [ -s "$work/hogs" ] && kill $(cat "$work/hogs") 2>/dev/null; rm -f "$work/hogs"; }
trap 'unhog; stop_broker' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $n A/A experiments of $rounds rounds x 2 variants x ${secs}s, $rate msg/s, a hog on each of $cpus CPUs from the middle"
alarms=0
untold=0
seq_alarms=0
for i in $(seq "$n"); do
  export KILN_STORE="$work/aa$i.db"
  half=$rounds # runs before the drift: half the experiment's 2*rounds runs
  # --after-each runs in sh -c after every run: the count of runs so far, and the hog
  # started after the middle one (its PIDs written where this script stops them).
  after="n=\$((\$(cat $work/count 2>/dev/null || echo 0) + 1)); echo \$n >$work/count; \
if [ \$n -eq $half ]; then for _ in \$(seq $cpus); do (exec sh -c 'while :; do :; done') </dev/null >/dev/null 2>&1 & echo \$! >>$work/hogs; done; fi"
  rm -f "$work/count"
  "$kiln" run --variant a=true --variant b=true --after-each "$after" --repeat "$rounds" \
    -p "$beam" -e cpu -d "$secs" --warmup 1 --no-report "${load[@]}" >/dev/null 2>"$work/run$i.err" || {
    echo "experiment $i: kiln run failed"; tail -3 "$work/run$i.err"; unhog; continue; }
  unhog
  rc=0
  "$kiln" compare a b "${gates[@]}" >"$work/cmp$i.txt" 2>"$work/cmp$i.err" || rc=$?
  said=$(grep -o '^[^:]*against[^.:]*' "$work/cmp$i.txt" | head -1 || true)
  cpu=$(grep -E '^target CPU per msg' "$work/cmp$i.txt" | head -1 | tr -s ' ' | cut -c1-120 || true)
  [ "$rc" -eq 3 ] && alarms=$((alarms + 1))
  [ "$rc" -eq 4 ] && untold=$((untold + 1))
  line="experiment $i interleaved: exit $rc ($said) | $cpu"
  if [ "$i" -le "$control" ]; then
    export KILN_STORE="$work/seq$i.db"
    "$kiln" run --name sa --repeat "$rounds" -p "$beam" -e cpu -d "$secs" --warmup 1 --no-report "${load[@]}" >/dev/null 2>&1 || true
    hogs
    "$kiln" run --name sb --repeat "$rounds" -p "$beam" -e cpu -d "$secs" --warmup 1 --no-report "${load[@]}" >/dev/null 2>&1 || true
    unhog
    src=0
    "$kiln" compare sa sb "${gates[@]}" >"$work/seqcmp$i.txt" 2>&1 || src=$?
    [ "$src" -eq 3 ] && seq_alarms=$((seq_alarms + 1))
    scpu=$(grep -E '^target CPU per msg' "$work/seqcmp$i.txt" | head -1 | tr -s ' ' | cut -c1-120 || true)
    line="$line || one after the other: exit $src | $scpu"
  fi
  echo "$line"
done
echo "false alarms, interleaved and paired: $alarms of $n (cannot tell: $untold)"
[ "$control" -gt 0 ] && echo "false alarms, one group after the other: $seq_alarms of $control"
exit 0
