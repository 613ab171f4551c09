#!/usr/bin/env bash
# Reading a large pprof: `kiln collapse big.pb.gz` (pprof in, folded stacks out) against
# `go tool pprof -raw` (pprof in, every sample printed), round after round, in turn.
#
#   bench/pprof/run.sh [SAMPLES] [ROUNDS]
#
# The profile: SAMPLES distinct stacks 8-40 frames deep over 8,000 function names (little
# sharing, the hard case for a stack table), written as pprof by kiln from folded stacks.
set -euo pipefail
samples=${1:-300000}
rounds=${2:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
kiln=${KILN:-$root/target/release/kiln}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
# Both must agree before anything is timed.
"$kiln" collapse -q "$work/big.pb.gz" | awk '{s += $NF} END {print "kiln total:", s}'
go tool pprof -raw "$work/big.pb.gz" | awk '/^Samples:/ {on = 1; getline; next} /^Locations/ {on = 0} on && /:/ {s += $1} END {print "go total:  ", s}'
for r in $(seq "$rounds"); do
  /usr/bin/time -f "round $r kiln collapse:     %e s wall, %U s user, %M KiB max RSS" \
    "$kiln" collapse -q "$work/big.pb.gz" > /dev/null
  /usr/bin/time -f "round $r go tool pprof -raw: %e s wall, %U s user, %M KiB max RSS" \
    go tool pprof -raw "$work/big.pb.gz" > /dev/null
done
