#!/bin/sh
# The Go off-CPU case (seeds/go-pprof-vs-bcc-offcpu): a query server whose block cache
# reads the disk under its one mutex (examples/go-blockcache), swept over concurrency at a
# small and a large cache, each sweep under `kiln run -e cpu,offcpu` (one window per step).
#
#   bench/http/go_blockcache.sh [SECONDS-PER-STEP] [STEPS]   (default 10 s; 1,8,48,128,256)
#
# Prints per cache size the sweep table (answered req/s, latency, the server's CPU from
# /proc, kiln's CPU, the machine's), kiln's plateau verdict, and the share of the server's
# off-CPU time spent inside blockCache.get (the critical section: the read under the lock),
# also as seconds blocked there per second of the run; and kiln's first two findings.
#
# Needs: Go, a release build of kiln ($KILN, default target/release/kiln), root (off-CPU).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-10}
steps=${2:-1,8,48,128,256}
kiln=${KILN:-$root/target/release/kiln}
go=$(command -v go || echo /usr/local/go/bin/go)
[ -x "$kiln" ] || { echo "build kiln first: cargo build --release -p kiln (or set KILN)" >&2; exit 1; }

dir=$(mktemp -d /tmp/kiln-bench-gobc.XXXXXX)
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
(cd "$root/examples/go-blockcache" && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$go" build -o "$dir/go-blockcache" .)
store="$dir/runs.db"
nsteps=$(echo "$steps" | tr ',' '\n' | wc -l)
# The measurement covers the whole sweep (it ends with the sweep's last step; kiln run
# asks for the steps' time and 10 s, for the load's connecting before its first step).
measure=$(awk -v n="$nsteps" -v s="$secs" 'BEGIN { printf "%.1f", n * s + 10 }')

echo "# $(date -u +%Y-%m-%d) $(nproc) cores, $(uname -r); go-blockcache with 1 MiB blocks, 256 cities; ${secs} s per step"
for cache in 4 512; do
  "$dir/go-blockcache" -addr 127.0.0.1:0 -cache-mb "$cache" -block-kb 1024 -data-mb 256 > "$dir/server.out" 2>&1 &
  server=$!
  i=0
  while ! grep -q listening "$dir/server.out" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
  addr=$(sed -n 's/^listening on http:\/\/\([^ ]*\).*/\1/p' "$dir/server.out")
  echo
  echo "## cache ${cache} MiB ($(sed -n 's/.*(\(cache [^,]*\),.*/\1/p' "$dir/server.out")), server pid $server"
  KILN_STORE="$store" "$kiln" run --name "cache-$cache" -p "$server" -e cpu,offcpu -d "$measure" \
    load http -t 1 -d "${secs}s" --concurrency-sweep "$steps" --target-pid "$server" \
    "http://$addr/query?city={rand:0-255}&days=30" > "$dir/run.out" 2> "$dir/run.err" || true
  KILN_STORE="$store" "$kiln" runs show "cache-$cache" --json > "$dir/show.json"
  python3 - "$dir/show.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["load"]["report"]["summary"]
print(f"{'conns':>6} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'server CPU % of a core':>23} {'ctx sw/s':>9} {'kiln CPU %':>10} {'machine CPU %':>13}")
for row in s["rows"]:
    l = row["latency"] or {}
    print(f"{row['value']:>6.0f} {row['answered_rate']:>8.0f} {l.get('p50_us', 0) / 1000:>8.2f} {l.get('p99_us', 0) / 1000:>8.2f} "
          f"{row['target_cpu_pct'] or 0:>23.1f} {row['target_ctx_switches_per_s'] or 0:>9.0f} {row['client_cpu_pct']:>10.1f} {row['machine_cpu_pct']:>13.1f}")
print("plateau:", s["plateau"]["verdict"])
print("run status:", r["status"])
for i, f in enumerate((r.get("findings") or [])[:2]):
    print(f"kiln's finding {i + 1}: {f.get('class')}: {f.get('claim')}")
PY
  KILN_STORE="$store" "$kiln" collapse --event-filter offcpu "run:cache-$cache" > "$dir/off.folded" 2> /dev/null
  # Off-CPU weights are microseconds blocked (as bcc's offcputime counts them).
  awk -v secs="$measure" '{ n = $NF; t += n; if ($0 ~ /main\.\(\*blockCache\)\.get/) b += n; if ($0 ~ /main\.\(\*blockCache\)\.get.*pread/) io += n }
    END { if (t > 0) printf "off-CPU: %.1f s blocked in all, %.1f%% of it inside blockCache.get (%.2f s per s of the run; the read under the lock: %.2f s per s)\n", t / 1e6, 100 * b / t, b / 1e6 / secs, io / 1e6 / secs }' "$dir/off.folded"
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  server=""
done
