#!/usr/bin/env bash
# Overhead of off-CPU recording on a context-switch-heavy program.
#
# Runs a pipe ping-pong between two threads (every round trip = 2 blocks +
# 2 wake-ups) without a tracer, with kiln-bpf recording its pid, and with the
# equivalent bpftrace script (offcpu.bt) if bpftrace is installed, alternating
# ROUNDS times, and prints round trips/s and the ratios to the baseline.
# Needs root. Usage: bench/offcpu/run.sh [ROUNDS] [SECONDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rounds=${1:-3}
secs=${2:-5}
warm=2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gcc -O2 -pthread -o "$work/pingpong" "$here/pingpong.c"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
cargo build -q --release -p kiln-bpf --example offcpu
kiln="$CARGO_TARGET_DIR/release/examples/offcpu"

# run MODE -> prints round trips/s; the tracer attaches during the warm-up.
run() {
	local mode=$1 tracer=""
	coproc PP { "$work/pingpong" "$warm" "$secs"; }
	local pp_out=${PP[0]} pp_pid=$PP_PID
	read -r _ pid <&"$pp_out"
	case $mode in
	kiln)
		"$kiln" $((warm + secs)) "$pid" >"$work/kiln.out" 2>"$work/kiln.err" &
		tracer=$!
		;;
	bpftrace)
		bpftrace "$here/offcpu.bt" "$pid" >"$work/bt.out" 2>&1 &
		tracer=$!
		;;
	esac
	local line
	read -r _ line <&"$pp_out"
	wait "$pp_pid" || true
	if [ -n "$tracer" ]; then
		kill -INT "$tracer" 2>/dev/null || true
		wait "$tracer" || true
	fi
	echo "$line"
}

modes="none kiln"
command -v bpftrace >/dev/null && modes="$modes bpftrace"
declare -A sum
for m in $modes; do sum[$m]=0; done
for r in $(seq "$rounds"); do
	for m in $modes; do
		v=$(run "$m")
		echo "round $r $m: $v round trips/s"
		sum[$m]=$((${sum[$m]} + ${v%.*}))
	done
done
base=$((${sum[none]} / rounds))
echo "--- mean of $rounds rounds of ${secs}s ($(nproc) CPUs)"
for m in $modes; do
	mean=$((${sum[$m]} / rounds))
	awk -v m="$m" -v v="$mean" -v b="$base" \
		'BEGIN { printf "%-9s %9d round trips/s  %.3f of baseline\n", m, v, v / b }'
done
if [ -s "$work/kiln.err" ]; then
	echo "--- kiln-bpf (last run)"
	head -3 "$work/kiln.err"
fi
