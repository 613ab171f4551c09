#!/bin/sh
# kiln load http vs wrk (closed loop) and vegeta (constant rate), same private nginx
# (one worker, keep-alive, a 612-byte static file), same run, each side REPS times in turn.
#
#   bench/http/run.sh [SECONDS] [REPS]          (default 10 s per run, 3 repetitions)
#
# Closed loop: `wrk -t1 -c64 --latency` and `kiln load http -t1 -c64`.
# Constant rate, at each of $RATES (default 2000 and 10000 req/s): `vegeta attack -rate R/s`
# (its CPU measured on the attack alone, the report is decoded afterwards) and
# `kiln load http -t1 -c64 -R R`.
# For each run: answered requests/s, the client's CPU seconds (user+sys, /usr/bin/time) and
# microseconds of client CPU per request, p50/p99 latency (for the constant rate: kiln's
# from the intended send time; vegeta's from its send), the nginx worker's CPU seconds.
# Then medians and kiln/anchor ratios, and kiln's RSS holding 10,000 keep-alive connections.
#
# Needs: nginx and wrk (Debian), vegeta (go install github.com/tsenart/vegeta/v12@v12.13.0;
# scripts/install-deps.sh does it), a release build of kiln ($KILN, default
# target/release/kiln).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-10}
reps=${2:-3}
kiln=${KILN:-$root/target/release/kiln}
vegeta=${VEGETA:-$(command -v vegeta || echo "$HOME/go/bin/vegeta")}
port=${BENCH_PORT:-18480}
# Constant rates: vegeta keeps up with the lower one on a loaded 2-core machine; the higher
# is the goal's.
rates=${RATES:-2000 10000}
rate=$(echo "$rates" | awk '{print $NF}')
[ -x "$kiln" ] || { echo "build kiln first: cargo build --release -p kiln (or set KILN)" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk not found (apt-get install wrk)" >&2; exit 1; }

dir=$(mktemp -d /tmp/kiln-bench-http.XXXXXX)
cleanup() { "$here/nginx.sh" stop "$dir/nginx" || true; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
worker=$("$here/nginx.sh" start "$dir/nginx" "$port")
url="http://127.0.0.1:$port/index.html"
ticks() { awk '{print $14 + $15}' "/proc/$worker/stat"; }
tck=$(getconf CLK_TCK)

# Latency in wrk's units (us, ms, s) to ms.
to_ms() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'; }

echo "# $(date -u +%Y-%m-%d) $(nproc) cores; nginx $(dpkg-query -W -f '${Version}' nginx 2>/dev/null || echo ?) one worker; wrk $(dpkg-query -W -f '${Version}' wrk 2>/dev/null || echo ?); vegeta $( (go version -m "$vegeta" 2>/dev/null || /usr/local/go/bin/go version -m "$vegeta" 2>/dev/null) | awk '$1 == "mod" {print $3}' || echo absent); ${secs} s per run, ${reps} runs each"
printf '%-6s %-7s %12s %9s %11s %9s %9s %9s\n' mode tool "req/s" "client s" "client µs/req" "p50 ms" "p99 ms" "nginx s"

results="$dir/results"
: > "$results"
row() { # mode tool reqs cpu p50 p99 nginx_s
  rps=$(awk -v n="$3" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
  per=$(awk -v c="$4" -v n="$3" 'BEGIN { if (n > 0) printf "%.2f", c * 1e6 / n; else print "-" }')
  printf '%-6s %-7s %12s %9s %11s %9s %9s %9s\n' "$1" "$2" "$rps" "$4" "$per" "$5" "$6" "$7"
  echo "$1 $2 $rps $4 $per $5 $6 $7" >> "$results"
}

closed_wrk() {
  t0=$(ticks)
  /usr/bin/time -f '%U %S' -o "$dir/time" wrk -t1 -c64 -d"${secs}s" --latency "$url" > "$dir/out"
  t1=$(ticks)
  reqs=$(awk '/requests in/ {print $1}' "$dir/out")
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$dir/out")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$dir/out")")
  row closed wrk "$reqs" "$(awk '{printf "%.2f", $1 + $2}' "$dir/time")" "$p50" "$p99" "$(awk -v a="$t0" -v b="$t1" -v t="$tck" 'BEGIN {printf "%.2f", (b - a) / t}')"
}

kiln_run() { # mode extra-args...
  mode=$1; shift
  t0=$(ticks)
  /usr/bin/time -f '%U %S %M' -o "$dir/time" "$kiln" load http -t1 -c64 -d"${secs}s" "$@" "$url" > "$dir/out"
  t1=$(ticks)
  # "requests: N sent = M answered + …"; the summary's first latency line is the headline one
  # (from the intended send with -R, closed-loop otherwise), in µs.
  reqs=$(grep -o 'sent = [0-9]* answered' "$dir/out" | awk '{print $3}')
  lat=$(grep -E 'id: http, (latency from intended send|latency \(closed-loop)' "$dir/out" | head -1 | grep -o '[0-9]*/[0-9]*/[0-9]*/[0-9]*/[0-9]*/[0-9]*/[0-9]* µs')
  p50=$(echo "$lat" | cut -d/ -f2 | awk '{printf "%.3f", $1 / 1000}')
  p99=$(echo "$lat" | cut -d/ -f5 | awk '{printf "%.3f", $1 / 1000}')
  row "$mode" kiln "$reqs" "$(awk '{printf "%.2f", $1 + $2}' "$dir/time")" "$p50" "$p99" "$(awk -v a="$t0" -v b="$t1" -v t="$tck" 'BEGIN {printf "%.2f", (b - a) / t}')"
}

rate_vegeta() { # rate
  t0=$(ticks)
  echo "GET $url" | /usr/bin/time -f '%U %S' -o "$dir/time" "$vegeta" attack -rate="$1/s" -duration="${secs}s" -keepalive=true > "$dir/vegeta.bin"
  t1=$(ticks)
  "$vegeta" report -type=json < "$dir/vegeta.bin" > "$dir/vegeta.json"
  reqs=$(grep -o '"requests":[0-9]*' "$dir/vegeta.json" | cut -d: -f2)
  p50=$(grep -o '"50th":[0-9]*' "$dir/vegeta.json" | cut -d: -f2 | awk '{printf "%.3f", $1 / 1e6}')
  p99=$(grep -o '"99th":[0-9]*' "$dir/vegeta.json" | cut -d: -f2 | awk '{printf "%.3f", $1 / 1e6}')
  row "R$1" vegeta "$reqs" "$(awk '{printf "%.2f", $1 + $2}' "$dir/time")" "$p50" "$p99" "$(awk -v a="$t0" -v b="$t1" -v t="$tck" 'BEGIN {printf "%.2f", (b - a) / t}')"
}

i=0
while [ $i -lt "$reps" ]; do
  closed_wrk
  kiln_run closed
  for r in $rates; do
    if [ -x "$vegeta" ]; then rate_vegeta "$r"; fi
    kiln_run "R$r" -R "$r"
  done
  i=$((i + 1))
done

echo
echo "# medians over $reps runs (spread: min-max)"
med() { # mode tool column
  awk -v m="$1" -v t="$2" -v c="$3" '$1 == m && $2 == t {print $c}' "$results" | sort -g | awk '{a[NR] = $1} END { if (NR == 0) { print "- - -"; exit } printf "%s %s %s\n", a[int((NR + 1) / 2)], a[1], a[NR] }'
}
for m in closed $(for r in $rates; do printf 'R%s ' "$r"; done); do
  anchor=wrk; [ "$m" != closed ] && anchor=vegeta
  for t in $anchor kiln; do
    set -- $(med $m $t 3); r=$1 rl=$2 rh=$3
    set -- $(med $m $t 5); c=$1 cl=$2 ch=$3
    set -- $(med $m $t 7); p=$1
    printf '%-6s %-7s %10s req/s (%s-%s)  %8s µs CPU/req (%s-%s)  p99 %s ms\n' "$m" "$t" "$r" "$rl" "$rh" "$c" "$cl" "$ch" "$p"
  done
  set -- $(med $m $anchor 3); ar=$1; set -- $(med $m kiln 3); kr=$1
  set -- $(med $m $anchor 5); ac=$1; set -- $(med $m kiln 5); kc=$1
  set -- $(med $m $anchor 7); ap=$1; set -- $(med $m kiln 7); kp=$1
  awk -v m="$m" -v a="$anchor" -v ar="$ar" -v kr="$kr" -v ac="$ac" -v kc="$kc" -v ap="$ap" -v kp="$kp" 'BEGIN {
    if (ar + 0 > 0 && ac + 0 > 0) printf "%-6s kiln/%s: rate %.2fx, CPU per request %.2fx, p99 %.2fx\n", m, a, kr / ar, kc / ac, (ap + 0 > 0 ? kp / ap : 0) }'
done

echo
echo "# kiln holding 10,000 keep-alive connections at ${rate} req/s for ${secs} s"
/usr/bin/time -f '%U %S %M' -o "$dir/time" "$kiln" load http -t1 -c10000 -R "$rate" -d"${secs}s" --timeout 10s "$url" > "$dir/out"
grep -E 'requests:|answered rate|errors' "$dir/out"
awk '{printf "kiln max RSS %.1f MB (%.2f KB per connection), CPU %.2f s\n", $3 / 1024, $3 / 10000, $1 + $2}' "$dir/time"
