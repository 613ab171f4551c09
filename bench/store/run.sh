#!/usr/bin/env bash
# What the store's commands cost with many runs stored: RSS (/usr/bin/time -v) and time of
# `kiln runs`, `kiln runs show 4` and `kiln compare a b` on a store of RUNS runs, for each
# kiln binary given (say a build before and after a change), on SQLite and, with PG=1, on
# a private PostgreSQL server (Debian's, 127.0.0.1, a free port).
#
# The store is one real run copied: `kiln run` records a python3 http.server for 5 s under
# `kiln load http`, then its rows (metadata and blobs) are copied RUNS-1 times by SQL, each
# copy with a name of 100 (r0…r99) and a group of its own; the last two are named a and b.
#
# `kiln runs check` is measured too where a binary has it, and `kiln runs trend r0` (the
# history of one name: RUNS/100 runs of one configuration) where it has that.
#
# BLOBS=0 copies the metadata only (SQLite): listing reads no blob, and a store of 100,000
# runs then takes 0.5 GB rather than 3.4.
#
# The store is written by the last KILN: an older kiln refuses a newer schema (say a
# build before the listing columns, schema version 1, and one after), so compare such
# builds by running the script once for each.
#
# Usage: bench/store/run.sh [RUNS] [KILN...]    (default 10000, target/release/kiln)
#        PG=1 bench/store/run.sh 10000 /tmp/kiln-before target/release/kiln
set -euo pipefail
runs=${1:-10000}
shift || true
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(target/release/kiln)
kiln=${bins[-1]}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "${pgdata:-}" ]; then as_pg pg_ctl -D "$pgdata" -m immediate stop >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# One real run.
port=$(free_port)
(cd "$work" && exec python3 -m http.server -b 127.0.0.1 "$port" >/dev/null 2>&1) &
pids+=($!)
server=${pids[-1]}
until python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/')" 2>/dev/null; do sleep 0.2; done
KILN_STORE="$work/seed.db" "$kiln" run --name seed -d 5 --warmup 1 --no-report -p "$server" \
  load http -c 2 -R 300 "http://127.0.0.1:$port/" >/dev/null 2>"$work/seed.err"
echo "seed run: $(sqlite3 "$work/seed.db" "SELECT length(meta) FROM runs") bytes of metadata, $(sqlite3 "$work/seed.db" "SELECT count(*), sum(length(data)) FROM blobs") blobs (count, bytes)"

# RUNS runs: the seed (id 1) and its copies. The seed's other columns (the listing
# columns of a store that keeps them: its line in \`kiln runs\`, its configuration) are
# copied as they are.
sqlite_store() {
  cp "$work/seed.db" "$work/big.db"
  local extra
  extra=$(sqlite3 "$work/seed.db" "SELECT group_concat(', ' || name, '') FROM pragma_table_info('runs')
    WHERE name NOT IN ('id', 'name', 'grp', 'started_ms', 'complete', 'meta')")
  sqlite3 "$work/big.db" <<SQL
WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < $runs)
INSERT INTO runs (id, name, grp, started_ms, complete, meta $extra)
  SELECT i, nm, 'g' || i, started_ms + i, complete,
         json_set(meta, '\$.name', nm, '\$.group', 'g' || i) $extra
  FROM (SELECT i, CASE i WHEN $runs - 1 THEN 'a' WHEN $runs THEN 'b' ELSE 'r' || (i % 100) END AS nm FROM n), runs
  WHERE runs.id = 1;
INSERT INTO blobs (run_id, kind, name, codec, size, data)
  SELECT r.id, b.kind, b.name, b.codec, b.size, b.data FROM runs r, blobs b
  WHERE b.run_id = 1 AND r.id > 1 AND ${BLOBS:-1};
SQL
  stores+=("$work/big.db")
}

# PostgreSQL refuses to run as root: as root, its programs run as the postgres user.
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pg_store() {
  pgdata="$work/pg/data"
  mkdir -p "$work/pg"
  chmod 755 "$work"
  [ "$(id -u)" = 0 ] && chown postgres "$work/pg"
  as_pg initdb -D "$pgdata" -U kiln -A trust >/dev/null
  local pgport
  pgport=$(free_port)
  as_pg pg_ctl -D "$pgdata" -o "-p $pgport -k $work/pg -c listen_addresses=127.0.0.1" -l "$work/pg/log" -w start >/dev/null
  createdb -h 127.0.0.1 -p "$pgport" -U kiln runs
  local url="postgres://kiln@127.0.0.1:$pgport/runs"
  KILN_STORE="$url" "$kiln" runs import "$work/seed.db" 2>/dev/null
  local extra
  extra=$(psql -Atq -h 127.0.0.1 -p "$pgport" -U kiln runs -c "SELECT coalesce(string_agg(', ' || column_name, ''), '')
    FROM information_schema.columns WHERE table_schema = 'kiln' AND table_name = 'runs'
    AND column_name NOT IN ('id', 'name', 'grp', 'started_ms', 'complete', 'meta')")
  psql -q -h 127.0.0.1 -p "$pgport" -U kiln runs >/dev/null <<SQL
INSERT INTO kiln.runs (id, name, grp, started_ms, complete, meta $extra)
  SELECT i, nm, 'g' || i, started_ms + i, complete,
         jsonb_set(jsonb_set(meta::jsonb, '{name}', to_jsonb(nm)), '{group}', to_jsonb('g' || i))::text $extra
  FROM (SELECT i, CASE i WHEN $runs - 1 THEN 'a' WHEN $runs THEN 'b' ELSE 'r' || (i % 100) END AS nm
        FROM generate_series(2, $runs) i) n, kiln.runs
  WHERE kiln.runs.id = 1;
SELECT setval('kiln.runs_id_seq', $runs);
INSERT INTO kiln.blobs (run_id, kind, name, codec, size, data)
  SELECT r.id, b.kind, b.name, b.codec, b.size, b.data FROM kiln.runs r, kiln.blobs b
  WHERE b.run_id = 1 AND r.id > 1;
VACUUM ANALYZE;
SQL
  stores+=("$url")
}

# RSS, wall time and CPU (user + system) of one command: the best of 3 of each (the
# machine is shared).
measure() {
  local store=$1 bin=$2
  shift 2
  local best_t="" best_cpu="" best_rss="" rc
  for _ in 1 2 3; do
    rc=0
    KILN_STORE="$store" /usr/bin/time -v "$bin" "$@" >/dev/null 2>"$work/time.txt" || rc=$?
    local t cpu rss
    t=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$work/time.txt")
    cpu=$(awk -F': ' '/(User|System) time \(seconds\)/ { s += $2 } END { print s }' "$work/time.txt")
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time.txt")
    if [ -z "$best_t" ] || awk -v a="$t" -v b="$best_t" 'BEGIN { exit !(a < b) }'; then best_t=$t; fi
    if [ -z "$best_cpu" ] || awk -v a="$cpu" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; then best_cpu=$cpu; fi
    if [ -z "$best_rss" ] || [ "$rss" -lt "$best_rss" ]; then best_rss=$rss; fi
  done
  printf '  %-24s %8.1f MB %7.2f s wall %7.2f s CPU%s\n' "$*" "$(awk -v k="$best_rss" 'BEGIN { print k / 1024 }')" \
    "$best_t" "$best_cpu" "$([ "$rc" -eq 0 ] || echo "  (exit $rc)")"
}

stores=()
sqlite_store
if [ "${PG:-0}" = 1 ]; then pg_store; fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $runs runs"
for store in "${stores[@]}"; do
  case $store in postgres*) kind=PostgreSQL ;; *) kind="SQLite ($(du -m "$store" | cut -f1) MB)" ;; esac
  for bin in "${bins[@]}"; do
    echo "$kind, $bin:"
    measure "$store" "$bin" runs
    measure "$store" "$bin" runs show 4
    measure "$store" "$bin" compare a b
    # The whole store read (damaged runs sought), where the binary has the command.
    if "$bin" runs check --help >/dev/null 2>&1; then measure "$store" "$bin" runs check; fi
    # One name's history (RUNS/100 runs, all one configuration), where the binary has it.
    if "$bin" runs trend --help >/dev/null 2>&1; then measure "$store" "$bin" runs trend r0 --functions 0; fi
  done
done
