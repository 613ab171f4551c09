#!/usr/bin/env bash
# pprof in and out.
#
# Reading: `kiln collapse big.pb.gz` (pprof in, folded stacks out) against what users do
# without kiln, `go tool pprof -raw big.pb.gz | awk -f fold-raw.awk` (bench/pprof/fold-raw.awk:
# -raw's samples and locations folded, inlined frames expanded; its output is checked to be
# the same as kiln's), and against `go tool pprof -raw` alone; round after round, in turn.
#
# Writing: the profile of a large `perf script` recording (bench/work/perf-big.txt, the
# collapse benchmark's input, recorded by bench/collapse/run.sh) kept in kiln's native
# format, then written as pprof, with writing it as folded text beside for scale.
#
#   bench/pprof/run.sh [SAMPLES] [ROUNDS]      (default 900000 samples: ~50 MB of protobuf)
#   KILN_BEFORE=path/to/older/kiln bench/pprof/run.sh ...   (also times that build, in turn)
#
# The profile read: SAMPLES distinct stacks 8-40 frames deep over 8,000 function names
# (little sharing, the hard case for a stack table), written as pprof by kiln from folded
# stacks.
set -euo pipefail
samples=${1:-900000}
rounds=${2:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
if [ -z "${KILN:-}" ]; then
  (cd "$root" && cargo build --release -q -p kiln)
fi
kiln=${KILN:-$CARGO_TARGET_DIR/release/kiln}
fold=$root/bench/pprof/fold-raw.awk
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "date: $(date -u +%F), cpus: $(nproc), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$samples" > "$work/big.folded" <<'PY'
import random, sys
random.seed(7)
names = [f"pkg{i % 97}.(*Type{i % 31}).Method{i}" for i in range(8000)]
out = sys.stdout
for i in range(int(sys.argv[1])):
    d = random.randint(8, 40)
    out.write(";".join(names[(i * 7 + k * k * 13 + (i >> k)) % 8000] for k in range(d)))
    out.write(f" {random.randint(1, 50)}\n")
PY
"$kiln" collapse -q "$work/big.folded" -o "$work/big.pb.gz"
echo "profile: $samples samples, $(stat -c %s "$work/big.pb.gz") bytes gzipped, $(gunzip -c "$work/big.pb.gz" | wc -c) bytes of protobuf"
# All must agree before anything is timed.
"$kiln" collapse -q "$work/big.pb.gz" | sort > "$work/kiln.folded"
go tool pprof -raw "$work/big.pb.gz" | awk -f "$fold" | sort > "$work/awk.folded"
if cmp -s "$work/kiln.folded" "$work/awk.folded"; then
  echo "kiln and go tool pprof -raw | fold-raw.awk: the same $(wc -l < "$work/kiln.folded") stacks, total $(awk '{s += $NF} END {print s}' "$work/kiln.folded")"
else
  echo "kiln and go tool pprof -raw | fold-raw.awk disagree:" >&2
  diff "$work/kiln.folded" "$work/awk.folded" | head >&2
  exit 1
fi
for r in $(seq "$rounds"); do
  /usr/bin/time -f "round $r kiln collapse:                 %e s wall, %U s user, %M KiB max RSS" \
    "$kiln" collapse -q "$work/big.pb.gz" > /dev/null
  if [ -n "${KILN_BEFORE:-}" ]; then
    /usr/bin/time -f "round $r kiln collapse (KILN_BEFORE):   %e s wall, %U s user, %M KiB max RSS" \
      "$KILN_BEFORE" collapse -q "$work/big.pb.gz" > /dev/null
  fi
  /usr/bin/time -f "round $r go tool pprof -raw | awk fold: %e s wall (the pipeline), %M KiB max RSS (largest)" \
    sh -c 'go tool pprof -raw "$1" | awk -f "$2" > /dev/null' sh "$work/big.pb.gz" "$fold"
  /usr/bin/time -f "round $r go tool pprof -raw alone:      %e s wall, %U s user, %M KiB max RSS" \
    go tool pprof -raw "$work/big.pb.gz" > /dev/null
done

big=$root/bench/work/perf-big.txt
if [ ! -s "$big" ]; then
  echo "writing: skipped, no $big (bench/collapse/run.sh records it)"
  exit 0
fi
"$kiln" collapse -q "$big" -o "$work/big.kiln"
echo "writing: the profile of $big ($(($(stat -L -c %s "$big") / 1000000)) MB of perf script), kept as $(stat -c %s "$work/big.kiln") bytes of kiln's native format"
for r in $(seq "$rounds"); do
  /usr/bin/time -f "round $r native -> pprof:  %e s wall, %U s user, %M KiB max RSS" \
    "$kiln" collapse -q "$work/big.kiln" -o "$work/out.pb.gz"
  /usr/bin/time -f "round $r native -> folded: %e s wall, %U s user, %M KiB max RSS" \
    "$kiln" collapse -q "$work/big.kiln" -o "$work/out.folded"
done
go tool pprof -raw "$work/out.pb.gz" | awk -f "$fold" | awk '{s += $NF} END {printf "pprof written: %.0f as go tool pprof reads it\n", s}'
awk '{s += $NF} END {printf "folded written: %.0f\n", s}' "$work/out.folded"
