#!/usr/bin/env bash
# Share of BEAM CPU samples whose stack carries an Erlang frame (a JIT perf-map name,
# `$module:function/arity`), on Debian's stripped beam.smp started with `+JPperf map`:
# kiln record (CFI for beam.smp's C code, frame pointers for JIT code) vs
# perf record -g (frame pointers only) + perf script | inferno-collapse-perf, same
# workload, same run. The workload is the test program crates/record/tests/programs/hot.erl
# (a busy Erlang process); for RabbitMQ, record the broker's beam.smp with -p instead.
#
# Usage: bench/record/erlang_frames.sh [SECONDS]   (default 10)
set -euo pipefail
secs=${1:-10}
root=$(cd "$(dirname "$0")/../.." && pwd)
kiln=${KILN:-$root/target/release/kiln}
if [ ! -x "$kiln" ]; then
    (cd "$root" && cargo build --release -p kiln)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
erlc -o "$work" "$root/crates/record/tests/programs/hot.erl"
run=(erl +JPperf map -noshell -pa "$work" -eval "hot:start($secs), halt().")

share() { # folded stacks on stdin -> "erlang_samples total_samples"
    awk '{n=$NF; t+=n; if ($0 ~ /(^|;)\$[^;]*:/) e+=n} END {printf "%.0f %.0f\n", e, t}'
}
"$kiln" record -o "$work/kiln.folded" -- "${run[@]}" 2>/dev/null
read -r ke kt < <(grep -E '^[0-9]+_scheduler|^beam' "$work/kiln.folded" | share)
perf record -q -g -F 999 -o "$work/perf.data" -- "${run[@]}" 2>/dev/null
perf script -i "$work/perf.data" 2>/dev/null | inferno-collapse-perf >"$work/perf.folded"
read -r pe pt < <(grep -E '^[0-9]+_scheduler|^beam' "$work/perf.folded" | share)
printf 'kiln record:    %.0f of %.0f scheduler samples have an Erlang frame (%.1f%%)\n' "$ke" "$kt" "$(echo "100 * $ke / $kt" | bc -l)"
printf 'perf record -g: %.0f of %.0f scheduler weight (inferno sums periods, ns) has an Erlang frame (%.1f%%)\n' "$pe" "$pt" "$(echo "100 * $pe / $pt" | bc -l)"
