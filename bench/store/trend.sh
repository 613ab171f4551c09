#!/usr/bin/env bash
# What `kiln runs trend` costs.
#
# 1. The change-point detection alone (E-divisive means and its permutation test, as
#    `kiln runs trend` runs it per figure: crates/compare/examples/changepoints.rs) on a
#    series of POINTS values (default 100,000): normal noise (sd 5) around 100, a step to
#    120 at 40% and back to 110 at 70%; and on a flat series of as many.
# 2. `kiln runs trend` over RUNS runs (default 1000) of one name and configuration in an
#    SQLite store: one real run (kiln run of a python3 http.server under kiln load http,
#    2 s) copied RUNS-1 times by SQL (metadata and blobs, as bench/store/run.sh does),
#    each copy's p50 and CPU per request set to 100 ± 5% noise with a step of +30% at 70%
#    of the runs; RSS, wall time and CPU (/usr/bin/time -v, the best of 3).
#
# 3. `kiln compare NAME '#1'` with that name as the baseline (its history read as the
#    noise floor), on the same store.
#
# The copies carry the listing columns a save writes (kiln runs list reads them, not the
# metadata); the newest BLOBS runs (default 2000) carry the real run's profiles and
# series, the older ones none, so that 100,000 runs fit in a few GB: `kiln runs trend`
# reads the newest --last (1000) runs of a configuration.
#
# Usage: bench/store/trend.sh [POINTS] [RUNS] [KILN]
#        (KILN default target/release/kiln; the example is built --release)
set -euo pipefail
points=${1:-100000}
runs=${2:-1000}
kiln=${3:-target/release/kiln}
blobs=${BLOBS:-2000}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

# 1. The detection alone.
cargo build -q --release -p kiln-compare --example changepoints
ex=target/release/examples/changepoints
python3 - "$points" >"$work/step.txt" <<'PY'
import random, sys
n = int(sys.argv[1]); r = random.Random(1)
for i in range(n):
    level = 100 if i < 0.4 * n else (120 if i < 0.7 * n else 110)
    print(level + r.gauss(0, 5))
PY
python3 - "$points" >"$work/flat.txt" <<'PY'
import random, sys
n = int(sys.argv[1]); r = random.Random(2)
for i in range(n):
    print(100 + r.gauss(0, 5))
PY
echo "change points of $points values with steps at $((points * 4 / 10)) and $((points * 7 / 10)) (release build):"
/usr/bin/time -f '  %e s wall, %M KB max RSS' "$ex" <"$work/step.txt" 2>&1 | sed 's/^/  /'
echo "change points of $points flat values:"
/usr/bin/time -f '  %e s wall, %M KB max RSS' "$ex" <"$work/flat.txt" 2>&1 | sed 's/^/  /'

# 2. kiln runs trend over a store of RUNS runs.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
(cd "$work" && exec python3 -m http.server -b 127.0.0.1 "$port" >/dev/null 2>&1) &
pids+=($!)
server=${pids[-1]}
until python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/')" 2>/dev/null; do sleep 0.2; done
KILN_STORE="$work/t.db" "$kiln" run --name trend -d 2 --warmup 1 --no-report -p "$server" \
  load http -c 2 -R 300 "http://127.0.0.1:$port/" >/dev/null 2>"$work/seed.err"
step=$((runs * 7 / 10))
sqlite3 "$work/t.db" <<SQL
WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < $runs)
INSERT INTO runs (id, name, grp, started_ms, complete, meta)
  SELECT i, name, 'g' || i, started_ms + i * 1000, complete,
         json_set(meta, '\$.group', 'g' || i, '\$.started_unix_ms', started_ms + i * 1000,
                  '\$.headline.p50_us', (CASE WHEN i > $step THEN 130 ELSE 100 END) * (0.95 + (abs(random()) % 1000) / 10000.0),
                  '\$.headline.cpu_per_op_us', (CASE WHEN i > $step THEN 130 ELSE 100 END) * (0.95 + (abs(random()) % 1000) / 10000.0))
  FROM n, runs WHERE runs.id = 1;
UPDATE runs SET (target_comm, load_text, throughput, p99_us, config) =
  (SELECT target_comm, load_text, throughput, p99_us, config FROM runs WHERE id = 1),
  p50_us = json_extract(meta, '\$.headline.p50_us'),
  cpu_per_op_us = json_extract(meta, '\$.headline.cpu_per_op_us')
  WHERE id > 1;
INSERT INTO blobs (run_id, kind, name, codec, size, data)
  SELECT r.id, b.kind, b.name, b.codec, b.size, b.data FROM runs r, blobs b
  WHERE b.run_id = 1 AND r.id > 1 AND r.id > $runs - $blobs;
SQL
echo "kiln runs trend over $runs runs ($(du -m "$work/t.db" | cut -f1) MB SQLite store), step at run $((step + 1)):"
KILN_STORE="$work/t.db" "$kiln" runs trend trend | grep -E '^  run #|p50|CPU per' | sed 's/^/  /'
for f in 3 0; do
  best=""
  for _ in 1 2 3; do
    KILN_STORE="$work/t.db" /usr/bin/time -f '%e %U %S %M' -o "$work/time.txt" "$kiln" runs trend trend --functions $f >/dev/null
    read -r wall user sys rss <"$work/time.txt"
    line=$(printf '%7.2f s wall %7.2f s CPU %8.1f MB' "$wall" "$(echo "$user + $sys" | bc)" "$(echo "scale=1; $rss / 1024" | bc)")
    if [ -z "$best" ] || awk -v a="$wall" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then best="$wall $line"; fi
  done
  echo "  --functions $f: ${best#* }"
done
best=""
for _ in 1 2 3; do
  KILN_STORE="$work/t.db" /usr/bin/time -f '%e %U %S %M' -o "$work/time.txt" "$kiln" compare trend '#1' >/dev/null 2>&1 || true
  read -r wall user sys rss <"$work/time.txt"
  line=$(printf '%7.2f s wall %7.2f s CPU %8.1f MB' "$wall" "$(echo "$user + $sys" | bc)" "$(echo "scale=1; $rss / 1024" | bc)")
  if [ -z "$best" ] || awk -v a="$wall" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then best="$wall $line"; fi
done
echo "kiln compare trend '#1' (the name as baseline, its history the noise floor): ${best#* }"
