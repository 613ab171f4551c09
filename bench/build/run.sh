#!/usr/bin/env bash
# Build benchmark: what kiln's release build costs, and whether its hot paths need
# cross-crate LTO. In the same run, from empty target directories, one after the other:
#   head      this tree as it is (no LTO; Debian's SQLite and zstd linked)
#   head+lto  this tree with CARGO_PROFILE_RELEASE_LTO=thin
#   base      BASE_REV (default 08bf559: thin LTO, SQLite and zstd compiled from bundled C)
# each timed (wall and CPU) with the crates already downloaded; then kiln collapse of a
# `perf script` text and kiln flamegraph of a folded file with the head and head+lto
# binaries in turn, round after round (a burst of load on this shared machine hits both
# alike): median wall time of each and the ratio of every round.
#
#   bench/build/run.sh [BASE_REV]       (ROUNDS=N rounds of each command, default 5;
#                                        SKIP_BUILDS=1 keeps the last run's builds and times)
# Needs: git, python3, GNU time; perf (for the collapse input, recorded once, as
# bench/collapse/run.sh does) — without perf the collapse rounds are skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$root/bench/work/build
mkdir -p "$work"
export PATH="$HOME/.cargo/bin:$PATH"
base_rev=${1:-08bf559}
rounds=${ROUNDS:-5}
cd "$root"

# build NAME DIR [ENV...]: a release build of the tree in DIR from an empty target
# directory; prints "NAME wall_s cpu_s".
build() {
  local name=$1 dir=$2
  shift 2
  local target=$work/target-$name
  if [ -n "${SKIP_BUILDS:-}" ] && [ -x "$target/release/kiln" ]; then
    echo "$name $(cat "$work/time-$name.txt" | awk '{print $1, $2 + $3}') (from the last run)"
    return
  fi
  rm -rf "$target"
  (cd "$dir" && cargo fetch --locked -q)
  (cd "$dir" && env "$@" CARGO_TARGET_DIR="$target" /usr/bin/time -f "%e %U %S" -o "$work/time-$name.txt" \
    cargo build --release --locked -q -p kiln)
  read -r wall user sys < "$work/time-$name.txt"
  echo "$name $wall $(awk -v a="$user" -v b="$sys" 'BEGIN{print a+b}')"
}

echo "date: $(date -u +%F), cpus: $(nproc), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "head: $(git rev-parse --short HEAD), base: $base_rev"
basedir=$work/base-tree
rm -rf "$basedir"
git worktree prune
git worktree add -q --detach "$basedir" "$base_rev"
trap 'git -C "$root" worktree remove --force "$basedir" 2>/dev/null || true' EXIT

echo "== release builds from empty target directories (wall s, CPU s)"
{
  build head "$root"
  build head+lto "$root" CARGO_PROFILE_RELEASE_LTO=thin
  build base "$basedir"
} | tee "$work/builds.txt"
awk '{w[$1]=$2; c[$1]=$3} END {
  printf "head/base: wall %.2fx, CPU %.2fx; head/head+lto: wall %.2fx, CPU %.2fx\n",
    w["head"]/w["base"], c["head"]/c["base"], w["head"]/w["head+lto"], c["head"]/c["head+lto"]
}' "$work/builds.txt"

kiln=$work/target-head/release/kiln
kiln_lto=$work/target-head+lto/release/kiln
folded=$work/stacks-615k.folded
[ -s "$folded" ] || python3 "$root/bench/flamegraph/gen_folded.py" 615000 "$folded"
perf_txt=$root/bench/work/perf-big.txt
if [ ! -s "$perf_txt" ] && command -v perf >/dev/null 2>&1; then
  cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -pthread \
    "$root/examples/workload/workload.c" -o "$work/workload"
  perf record -q -a -g -F 999 -o "$work/perf.data" -- "$work/workload" 70 3 >/dev/null 2>&1
  perf script -i "$work/perf.data" > "$perf_txt" 2>/dev/null
  rm -f "$work/perf.data"
fi

cmds=()
names=()
if [ -s "$perf_txt" ]; then
  echo "collapse input: $perf_txt ($(($(stat -L -c %s "$perf_txt") / 1000000)) MB)"
  names+=(collapse collapse+lto)
  cmds+=("$kiln collapse -q $perf_txt" "$kiln_lto collapse -q $perf_txt")
fi
echo "flamegraph input: $folded ($(wc -l < "$folded") lines)"
names+=(svg svg+lto html html+lto)
cmds+=("$kiln flamegraph $folded" "$kiln_lto flamegraph $folded"
       "$kiln flamegraph --output-format html $folded" "$kiln_lto flamegraph --output-format html $folded")
# The outputs must agree before anything is timed.
for i in $(seq 0 2 $((${#cmds[@]} - 1))); do
  # shellcheck disable=SC2086
  cmp -s <(${cmds[$i]}) <(${cmds[$((i + 1))]}) || { echo "${names[$i]}: outputs differ" >&2; exit 1; }
done
: > "$work/rounds.txt"
for r in $(seq "$rounds"); do
  for i in "${!names[@]}"; do
    # shellcheck disable=SC2086
    /usr/bin/time -f "%e" -o "$work/time.txt" ${cmds[$i]} > /dev/null
    echo "$r ${names[$i]} $(cat "$work/time.txt")" >> "$work/rounds.txt"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/rounds.txt" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for r, name, wall in rows:
    by.setdefault(name, []).append(float(wall))
for name in by:
    if name.endswith("+lto"):
        continue
    a, b = by[name], by[name + "+lto"]
    per_round = " ".join(f"{x / y:.2f}" for x, y in zip(a, b))
    print(f"{name:10} no LTO {statistics.median(a):6.2f} s, thin LTO {statistics.median(b):6.2f} s: "
          f"ratio of medians {statistics.median(a) / statistics.median(b):.2f} (rounds: {per_round})")
EOF
