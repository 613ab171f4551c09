#!/usr/bin/env bash
# Render benchmark: kiln flamegraph vs inferno-flamegraph on the same folded file, in the
# same run, with default options and with --minwidth 0. kiln and inferno run in turn,
# round after round (a burst of load on this shared machine hits both alike); prints the
# median wall time and spread of each, peak RSS, the ratio of the medians and the ratio of
# every round (the goal is about every round, not the median).
#
# Usage: bench/flamegraph/run.sh [FOLDED_FILE]
#   Without a file, generates (once) a synthetic file of 615,000 unique stacks with
#   bench/flamegraph/gen_folded.py into ${KILN_BENCH_DIR:-/tmp/kiln-bench-flamegraph}.
#   RUNS=N rounds per mode (default 5).
# Needs: a release build of kiln (cargo build --release -p kiln), inferno-flamegraph
# (cargo install inferno), python3, GNU time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=${KILN_BENCH_DIR:-/tmp/kiln-bench-flamegraph}
mkdir -p "$dir"
kiln=${KILN:-${CARGO_TARGET_DIR:-$root/target}/release/kiln}
inferno=${INFERNO:-$(command -v inferno-flamegraph || echo "$HOME/.cargo/bin/inferno-flamegraph")}
runs=${RUNS:-5}
[ -x "$kiln" ] || { echo "no kiln binary at $kiln (cargo build --release -p kiln, or set KILN)" >&2; exit 1; }
[ -x "$inferno" ] || { echo "no inferno-flamegraph at $inferno (cargo install inferno, or set INFERNO)" >&2; exit 1; }
input=${1:-$dir/stacks-615k.folded}
if [ ! -s "$input" ]; then
    echo "generating $input ..." >&2
    python3 "$here/gen_folded.py" 615000 "$input"
fi
echo "input: $input ($(wc -l < "$input") lines, $(du -hL "$input" | cut -f1))"
echo "date: $(date -u +%F), cpus: $(nproc), load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# once TOOL ARGS...: "wall_s rss_kb cpu_s svg_bytes" of one run.
once() {
    /usr/bin/time -f "%e %M %U %S" -o "$dir/time.txt" "$@" > "$dir/out.svg"
    read -r w m u s < "$dir/time.txt"
    echo "$w $m $(awk -v a="$u" -v b="$s" 'BEGIN{print a+b}') $(stat -c %s "$dir/out.svg")"
}

for mode in default minwidth0; do
    args=()
    [ "$mode" = minwidth0 ] && args=(--minwidth 0)
    : > "$dir/rounds-$mode.txt"
    for r in $(seq "$runs"); do
        echo "kiln $(once "$kiln" flamegraph "${args[@]}" "$input")" >> "$dir/rounds-$mode.txt"
        echo "inferno $(once "$inferno" "${args[@]}" "$input")" >> "$dir/rounds-$mode.txt"
    done
    python3 - "$dir/rounds-$mode.txt" "$mode" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
k = [r for r in rows if r[0] == "kiln"]
i = [r for r in rows if r[0] == "inferno"]
def col(rs, c): return [float(r[c]) for r in rs]
kw, iw = col(k, 1), col(i, 1)
ratios = sorted(a / b for a, b in zip(iw, kw))
print(f"{sys.argv[2]:<10} kiln {st.median(kw):6.2f} s ({min(kw):.2f}-{max(kw):.2f}), CPU {st.median(col(k,3)):5.2f} s, "
      f"{max(col(k,2))/1024:5.0f} MB RSS, {int(k[0][4])//1048576} MB SVG | "
      f"inferno {st.median(iw):6.2f} s ({min(iw):.2f}-{max(iw):.2f}), CPU {st.median(col(i,3)):5.2f} s, "
      f"{max(col(i,2))/1024:5.0f} MB RSS, {int(i[0][4])//1048576} MB SVG")
print(f"{'':<10} speed-up {st.median(iw)/st.median(kw):.2f}x (rounds: {', '.join(f'{x:.2f}' for x in ratios)}), "
      f"CPU {st.median(col(i,3))/st.median(col(k,3)):.2f}x, memory {max(col(k,2))/max(col(i,2)):.2f}x")
PY
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Render alone (parse excluded), with RENDER_ONLY=1: compiles the bench in release mode.
if [ "${RENDER_ONLY:-0}" = 1 ]; then
    (cd "$root" && cargo bench -q -p kiln-flamegraph --bench render -- "$input" "$dir")
fi
