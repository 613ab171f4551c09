#!/usr/bin/env bash
# Debian RabbitMQ (stripped beam.smp, OTP JIT with +JPperf map) under a steady publish and
# consume load (kiln load amqp -r 5000). beam.smp is recorded SECONDS at 999 Hz, in turn, by
#   kiln record --unwind kernel   (stacks unwound in the kernel at sample time)
#   kiln record --unwind copy     (stack copies unwound afterwards, like perf --call-graph dwarf)
#   perf record -g                (frame pointers), collapsed by inferno-collapse-perf
# and for each it prints, as shares of beam.smp CPU samples:
#   (a) samples carrying an Erlang frame ($module:function/arity from the JIT perf map);
#   (b) complete: the outermost frame is a thread root (clone3, start_thread, _start,
#       __libc_start_main) or the root of the Erlang or scheduler code
#       ($erts_beamasm:normal_exit/0 at the bottom of every Erlang process's stack,
#       $global::process_main where the BEAM's scheduler loop clears the frame pointer),
#       and no frame is unresolved ([unknown]: an address in no mapping or perf-map entry);
#   (c) complete and named: (b), and no frame of code without a symbol either (kiln's
#       image+0xSTART, inferno's [image]): Debian's beam.smp is stripped, so its static
#       functions have no names unless erlang-base-dbgsym is installed.
# Usage: bench/record/rabbitmq.sh [SECONDS]   (default 15; root, or perf_event_paranoid <= 1)
set -euo pipefail
secs=${1:-15}
. "$(dirname "$0")/with_broker.sh"
"$kiln" load amqp --uri "$uri" -x 1 -y 1 -r 5000 -z $((3 * secs + 10)) >"$work/load.log" 2>&1 &
bg+=($!)
sleep 3
"$kiln" record --unwind kernel -p "$beam" -d "$secs" -o "$work/kernel.folded" 2>"$work/kernel.err"
"$kiln" record --unwind copy -p "$beam" -d "$secs" -o "$work/copy.folded" 2>"$work/copy.err"
perf record -q -g -F 999 -p "$beam" -o "$work/perf.data" -- sleep "$secs" 2>/dev/null
perf script -i "$work/perf.data" 2>/dev/null | inferno-collapse-perf >"$work/perf.folded"

# Prints "erlang complete named total" (sample weights) for a folded file.
measure() {
  awk '{
    n = $NF; s = $0; sub(/ [0-9]+$/, "", s); k = split(s, f, ";"); t += n
    if (s ~ /(^|;)\$[^;]*/) e += n
    unresolved = 0; nameless = 0
    for (j = 2; j <= k; j++) {
      if (f[j] ~ /\[unknown\]/) unresolved = 1
      if (f[j] ~ /\+0x[0-9a-f]+$/ || f[j] ~ /^\[[^]]+\]$/) nameless = 1
    }
    rooted = (f[2] ~ /^(__?clone3?|start_thread|_start|__libc_start_main|__libc_start_call_main|\$erts_beamasm:normal_exit\/0|\$global::process_main)$/)
    if (rooted && !unresolved) { c += n; if (!nameless) d += n }
  } END { printf "%.0f %.0f %.0f %.0f\n", e, c, d, t }' "$1"
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f%%", b ? 100 * a / b : 0 }'; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); beam.smp pid $beam; ${secs}s each at 999 Hz"
printf '%-22s %10s %12s %12s %10s\n' recorder "(a) Erlang" "(b) complete" "(c) +named" samples
for r in kernel copy perf; do
  read -r e c d t < <(measure "$work/$r.folded")
  printf '%-22s %10s %12s %12s %10s\n' "$r" "$(pct "$e" "$t")" "$(pct "$c" "$t")" "$(pct "$d" "$t")" "$t"
done
echo "(perf's weights are inferno's, by sample period; kiln's count samples)"
grep -h "stacks unwound in the kernel" "$work/kernel.err" || true
echo "load: $(grep -h 'sending rate avg\|consumer latency' "$work/load.log" | tail -1)"
