#!/bin/bash
# What nginx sees under wrk and under kiln (closed loop, `-t1 -c64`), alternating, ROUNDS
# rounds of SECONDS each on one private nginx (one worker): requests answered, the worker's
# CPU ticks and requests per tick, its voluntary and involuntary context switches, the
# client's CPU; with PERF=1 also the worker's system calls per request (perf stat on its
# tracepoints: all, epoll_wait, recvfrom, writev), which perturbs the rates.
#
#   bench/http/server_side.sh [SECONDS] [ROUNDS] [KILN...]   (default 5 s, 3 rounds,
#                                                             target/release/kiln)
# Several kiln binaries may be given (a before and an after build) to run in the same rounds.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
secs=${1:-5}
rounds=${2:-3}
shift 2 2>/dev/null || shift $#
[ $# -gt 0 ] || set -- "$here/../../target/release/kiln"
command -v wrk >/dev/null || { echo "wrk not found (apt-get install wrk)" >&2; exit 1; }
dir=$(mktemp -d /tmp/kiln-bench-nginx.XXXXXX)
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
trap '"$here/nginx.sh" stop "$dir/nginx" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
worker=$("$here/nginx.sh" start "$dir/nginx" "$port")
url="http://127.0.0.1:$port/index.html"
ticks() { awk '{print $14 + $15}' "/proc/$worker/stat"; }
switches() { awk '/^voluntary_ctxt_switches/ {v=$2} /^nonvoluntary_ctxt_switches/ {n=$2} END {print v, n}' "/proc/$worker/status"; }
echo "# $(date -u +%F) nginx worker $worker; ${secs} s x $rounds rounds; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-5s %-12s %9s %8s %9s %8s %8s %10s %s\n' round tool req/s ticks req/tick vol invol "client s" "syscalls/req (PERF=1)"
for r in $(seq "$rounds"); do
  for tool in wrk "$@"; do
    t0=$(ticks); read -r v0 n0 < <(switches)
    if [ -n "${PERF:-}" ]; then
      perf stat -x, -e raw_syscalls:sys_enter,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_recvfrom,syscalls:sys_enter_writev \
        -p "$worker" -o "$dir/perf.txt" -- sleep "$secs" &
      pp=$!
    fi
    if [ "$tool" = wrk ]; then
      n=$(/usr/bin/time -f '%U %S' -o "$dir/time" wrk -t1 -c64 -d"${secs}s" "$url" | awk '/requests in/ {print $1}')
    else
      /usr/bin/time -f '%U %S' -o "$dir/time" "$tool" load http -t1 -c64 -d "${secs}s" -o "$dir/k" "$url" >/dev/null 2>&1 || true
      n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["answered"])' "$dir/k.json" 2>/dev/null || echo 0)
    fi
    t1=$(ticks); read -r v1 n1 < <(switches)
    per=""
    if [ -n "${PERF:-}" ]; then
      wait "$pp" || true
      per=$(awk -F, -v n="$n" '$1 ~ /^[0-9]+$/ { sub(/.*sys_enter_?/, "", $3); printf "%s %.3f  ", ($3 == "" ? "all" : $3), $1 / n }' "$dir/perf.txt")
    fi
    cpu=$(awk '{print $1 + $2}' "$dir/time")
    printf '%-5s %-12s %9.0f %8d %9.0f %8d %8d %10s %s\n' "$r" "$(basename "$tool")" "$(echo "$n / $secs" | bc -l)" \
      $((t1 - t0)) "$(echo "$n / ($t1 - $t0 + 0.0001)" | bc -l)" $((v1 - v0)) $((n1 - n0)) "$cpu" "$per"
  done
done
