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
warm=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gcc -O2 -pthread -o "$work/pingpong" "$here/pingpong.c"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
cargo build -q --release -p kiln-bpf --example offcpu
kiln="$CARGO_TARGET_DIR/release/examples/offcpu"

# wait_for FILE TEXT: until the tracer says it is attached (30 s at most).
wait_for() {
	for _ in $(seq 300); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "tracer did not start: $(cat "$1")" >&2
	return 1
}

# max_prog_id: the newest eBPF program id, to tell the tracer's programs apart.
max_prog_id() {
	bpftool -j prog show | python3 -c 'import json, sys; print(max([p["id"] for p in json.load(sys.stdin)] or [0]))'
}

# bpf_cost MODE FIRST_ID: CPU time the tracer's eBPF programs (loaded after
# FIRST_ID) used per context switch: run_time_ns summed over its programs,
# divided by the switches seen (kernel.bpf_stats_enabled is on during the run).
bpf_cost() {
	bpftool -j prog show | python3 -c '
import json, sys
mode, first = sys.argv[1], int(sys.argv[2])
def mine(p):
    if p["id"] <= first:
        return False
    return p.get("name") == "kiln_sched_switch" if mode == "kiln" else p.get("type") == "tracepoint"
progs = [p for p in json.load(sys.stdin) if mine(p)]
ns = sum(p.get("run_time_ns", 0) for p in progs)
runs = max([p.get("run_cnt", 0) for p in progs] or [0])
print(f"{ns / runs:.0f}" if runs else "nan")
' "$1" "$2"
}

# run MODE -> prints round trips/s, measured once the tracer is attached.
run() {
	local mode=$1 tracer="" first
	first=$(max_prog_id)
	coproc PP { "$work/pingpong" "$warm" "$secs"; }
	local pp_out=${PP[0]} pp_in=${PP[1]} pp_pid=$PP_PID
	read -r _ pid <&"$pp_out"
	case $mode in
	kiln)
		"$kiln" $((warm + secs + 1)) "$pid" >"$work/kiln.out" 2>"$work/kiln.err" &
		tracer=$!
		wait_for "$work/kiln.err" recording
		;;
	bpftrace)
		bpftrace "$here/offcpu.bt" "$pid" >"$work/bt.out" 2>&1 &
		tracer=$!
		wait_for "$work/bt.out" Attaching
		;;
	esac
	echo go >&"$pp_in"
	local line
	read -r _ line <&"$pp_out"
	wait "$pp_pid" || true
	[ -n "$tracer" ] && bpf_cost "$mode" "$first" >>"$work/cost.$mode"
	# kiln's example stops by itself; bpftrace on SIGTERM (background jobs of
	# a script ignore SIGINT). Its printing of the stacks is not measured.
	[ "$mode" = bpftrace ] && kill -TERM "$tracer" 2>/dev/null
	[ -n "$tracer" ] && { wait "$tracer" || true; }
	echo "$line"
}

stats_before=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled="$stats_before"; rm -rf "$work"' EXIT

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
	cost=""
	[ -s "$work/cost.$m" ] && cost=$(awk '{ s += $1 } END { printf "  eBPF %.0f ns per context switch", s / NR }' "$work/cost.$m")
	awk -v m="$m" -v v="$mean" -v b="$base" -v c="$cost" \
		'BEGIN { printf "%-9s %9d round trips/s  %.3f of baseline%s\n", m, v, v / b, c }'
done
if [ -s "$work/kiln.err" ]; then
	echo "--- kiln-bpf (last run)"
	head -3 "$work/kiln.err"
fi
