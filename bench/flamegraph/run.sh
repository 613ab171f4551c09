#!/usr/bin/env bash
# Render benchmark: kiln flamegraph vs inferno-flamegraph on the same folded file, in the
# same run, with default options and with --minwidth 0. Prints times, ratios and peak RSS
# (from /usr/bin/time -v).
#
# Usage: bench/flamegraph/run.sh [FOLDED_FILE]
#   Without a file, generates (once) a synthetic file of 609,000 unique stacks with
#   bench/flamegraph/gen_folded.py into ${KILN_BENCH_DIR:-/tmp/kiln-bench-flamegraph}.
# Needs: a release build of kiln (cargo build --release -p kiln), inferno-flamegraph
# (cargo install inferno), python3, GNU time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=${KILN_BENCH_DIR:-/tmp/kiln-bench-flamegraph}
mkdir -p "$dir"
kiln=${KILN:-${CARGO_TARGET_DIR:-$root/target}/release/kiln}
inferno=${INFERNO:-$(command -v inferno-flamegraph || echo "$HOME/.cargo/bin/inferno-flamegraph")}
runs=${RUNS:-3}
[ -x "$kiln" ] || { echo "no kiln binary at $kiln (cargo build --release -p kiln, or set KILN)" >&2; exit 1; }
[ -x "$inferno" ] || { echo "no inferno-flamegraph at $inferno (cargo install inferno, or set INFERNO)" >&2; exit 1; }
input=${1:-$dir/stacks-609k.folded}
if [ ! -s "$input" ]; then
    echo "generating $input ..." >&2
    python3 "$here/gen_folded.py" 609000 "$input"
fi
echo "input: $input ($(wc -l < "$input") lines, $(du -hL "$input" | cut -f1))"
echo "date: $(date -u +%F), cpus: $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg)"

# measure NAME ARGS...: best wall time of $runs runs and the peak RSS of that run.
measure() {
    local best="" rss=""
    for _ in $(seq "$runs"); do
        /usr/bin/time -v -o "$dir/time.txt" "$@" > "$dir/out.svg"
        local t r
        t=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$dir/time.txt")
        r=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.txt")
        if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$t; rss=$r; fi
    done
    echo "$best $rss $(stat -c %s "$dir/out.svg")"
}

for mode in default minwidth0; do
    args=()
    [ "$mode" = minwidth0 ] && args=(--minwidth 0)
    read -r kt kr ks < <(measure "$kiln" flamegraph "${args[@]}" "$input")
    read -r it ir is < <(measure "$inferno" "${args[@]}" "$input")
    printf '%-10s kiln %6.2f s %7d MB RSS %6d MB SVG | inferno %6.2f s %7d MB RSS %6d MB SVG | speedup %.2fx, memory %.2fx\n' \
        "$mode" "$kt" $((kr / 1024)) $((ks / 1048576)) "$it" $((ir / 1024)) $((is / 1048576)) \
        "$(awk -v a="$it" -v b="$kt" 'BEGIN{print a/b}')" "$(awk -v a="$kr" -v b="$ir" 'BEGIN{print a/b}')"
done

# Render alone (parse excluded), with RENDER_ONLY=1: compiles the bench in release mode.
if [ "${RENDER_ONLY:-0}" = 1 ]; then
    (cd "$root" && cargo bench -q -p kiln-flamegraph --bench render -- "$input" "$dir")
fi
